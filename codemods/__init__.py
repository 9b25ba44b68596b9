"""jaxfix's rules, one module each (installed as `jaxfix.codemods`)."""
