"""`python -m jaxfix.lsp`: the language server on stdio, as `jaxfix lsp` runs it."""

from jaxfix.lsp.server import serve

serve()
