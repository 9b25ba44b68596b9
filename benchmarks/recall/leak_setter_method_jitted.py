# Report: https://github.com/jax-ml/jax/issues/26560
# What the user did: jitted a bound method whose body stores its argument on `self`, under the leak checker
# Raises: Exception (leak checker: "Leaked trace")
import jax


class Holder:
    def set_value(self, x):
        self.value = x


holder = Holder()
keep_alive = lambda: holder  # noqa: E731

with jax.check_tracer_leaks():
    jax.jit(holder.set_value)(7)
