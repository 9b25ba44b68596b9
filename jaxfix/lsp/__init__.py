"""The jaxfix language server (`jaxfix lsp`): diagnostics, quick fixes, fix-all and rule docs
in any editor that speaks the Language Server Protocol, built on pygls and lsprotocol."""
