"""The loss history, as Python floats."""
HISTORY = []


def log_loss(loss):
    HISTORY.append(round(float(loss), 4))
