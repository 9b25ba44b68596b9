# Report: https://github.com/PennyLaneAI/pennylane/issues/6380
# What the user did: jitted a circuit that takes its wire labels as an argument; the wire registry hashes each label into a set and a map
# Raises: TypeError
import jax
import jax.numpy as jnp


class Wires:
    def __init__(self, labels):
        labels = tuple(labels) if isinstance(labels, (list, tuple)) else (labels,)
        if len(set(labels)) != len(labels):
            raise ValueError("wires must be unique")
        self.labels = labels


class Device:
    def __init__(self, wires):
        self.wire_map = {w: i for i, w in enumerate(wires)}
        self.state = jnp.zeros(2 ** len(wires)).at[0].set(1.0)

    def hadamard(self, wires):
        (label,) = Wires(wires).labels
        index = self.wire_map[label]
        n = len(self.wire_map)
        h = jnp.array([[1.0, 1.0], [1.0, -1.0]]) / jnp.sqrt(2.0)
        psi = self.state.reshape((2,) * n)
        psi = jnp.moveaxis(jnp.tensordot(h, psi, axes=([1], [index])), 0, index)
        self.state = psi.reshape(-1)

    def probs(self):
        return jnp.abs(self.state) ** 2


@jax.jit
def circuit(input_wires):
    dev = Device(wires=(0, 1))
    dev.hadamard(input_wires[1])
    return dev.probs()


print(circuit([0, 1]))
