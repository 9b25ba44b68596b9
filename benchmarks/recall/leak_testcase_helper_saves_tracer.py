# Report: https://github.com/jax-ml/jax/pull/6189
# What the user did: a test case's helper method, jitted, saved its argument on the test instance (`self._saved_tracer = x`), and the test then used the saved value
# Raises: UnexpectedTracerError
import unittest

import jax


class EscapedTracerTest(unittest.TestCase):
    def helper_save_tracer(self, x):
        self._saved_tracer = x
        return x

    def test_escaped_tracer_transform_name(self):
        jax.jit(self.helper_save_tracer)(1)
        _ = self._saved_tracer + 1


if __name__ == "__main__":
    unittest.main()
