"""pi_notebook — a Jupyter-native agent kernel extension.

``%load_ext pi_notebook`` embeds an agent harness in the kernel. The layers import one way:
``ai`` ← ``agent`` ← ``harness`` ← ``notebook``; only ``notebook`` touches Jupyter.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
