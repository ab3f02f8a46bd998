"""OpenForge components: one subpackage per containerised step of an RL iteration.

Steps never import each other; they meet through the data contracts in
``components.core``.
"""
