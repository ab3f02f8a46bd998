"""Seeded worlds: the same seed gives the same items, prices and names on every machine.

A string seed makes ``random.Random`` hash it with SHA-512, which is stable across runs
and Python versions, unlike ``hash()``; the app name is part of it so the shop and the
flights of seed 1 are unrelated.
"""

from __future__ import annotations

import random

COLOURS = ("red", "blue", "green", "black", "white", "yellow", "grey", "orange", "purple", "teal")
MATERIALS = ("cotton", "steel", "oak", "bamboo", "glass", "wool", "leather", "ceramic", "linen", "copper")
PRODUCTS = ("mug", "lamp", "backpack", "scarf", "teapot", "notebook", "kettle", "blanket", "chair", "vase", "clock")
FIRST_NAMES = ("Ada", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kemi", "Lars")
LAST_NAMES = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Ferreira", "Novak", "Haddad", "Brennan", "Kowalski", "Silva")
CITIES = ("Lisbon", "Oslo", "Krakow", "Dublin", "Valencia", "Tallinn", "Bologna", "Ghent", "Porto", "Riga", "Lyon")
TOPICS = ("Compilers", "Databases", "Robotics", "Cryptography", "Networking", "Graphics", "Testing", "Type Systems")
FORMATS = ("Workshop", "Tutorial", "Keynote", "Panel", "Deep Dive")


def world_rng(app: str, seed: int) -> random.Random:
    return random.Random(f"openforge-web:{app}:{seed}")


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"
