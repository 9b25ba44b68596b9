"""A two-module package: `prices` returns pickled bytes from a jitted function, `report`
calls it. `jaxfix apply --unsafe-fixes examples/multi_module` rewrites both."""
