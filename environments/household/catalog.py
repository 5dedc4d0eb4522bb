"""What a household holds: room types, receptacle types, object types and their properties.

Modelled on ALFWorld's scenes (AI2-THOR kitchens, bedrooms, bathrooms and living rooms):
the same kinds of things with the same names (``countertop``, ``sinkbasin``, ``desklamp``),
each object type with the receptacle types it may rest in and the changes it admits
(cleaned in a sink basin, heated in a microwave, cooled in a fridge).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReceptacleType:
    name: str
    openable: bool = False
    #: How many a room may have (a range drawn per layout).
    count: tuple[int, int] = (1, 1)


@dataclass(frozen=True)
class ObjectType:
    name: str
    places: frozenset[str]
    cleanable: bool = False
    heatable: bool = False
    coolable: bool = False


@dataclass(frozen=True)
class LampType:
    name: str
    places: frozenset[str]


RECEPTACLES = {
    kind.name: kind
    for kind in (
        ReceptacleType("countertop", count=(1, 3)),
        ReceptacleType("cabinet", openable=True, count=(2, 6)),
        ReceptacleType("drawer", openable=True, count=(1, 5)),
        ReceptacleType("fridge", openable=True),
        ReceptacleType("microwave", openable=True),
        ReceptacleType("sinkbasin"),
        ReceptacleType("stoveburner", count=(2, 4)),
        ReceptacleType("diningtable"),
        ReceptacleType("coffeemachine"),
        ReceptacleType("toaster"),
        ReceptacleType("garbagecan"),
        ReceptacleType("shelf", count=(1, 4)),
        ReceptacleType("bed"),
        ReceptacleType("desk"),
        ReceptacleType("dresser"),
        ReceptacleType("sidetable", count=(1, 2)),
        ReceptacleType("safe", openable=True),
        ReceptacleType("bathtubbasin"),
        ReceptacleType("toilet"),
        ReceptacleType("towelholder"),
        ReceptacleType("sofa"),
        ReceptacleType("armchair"),
        ReceptacleType("coffeetable"),
        ReceptacleType("tvstand"),
    )
}

#: The receptacle types of each room: always there, and sometimes there.
ROOMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kitchen": (
        ("countertop", "cabinet", "drawer", "fridge", "microwave", "sinkbasin", "stoveburner", "garbagecan"),
        ("diningtable", "coffeemachine", "toaster", "shelf"),
    ),
    "bedroom": (
        ("bed", "desk", "drawer", "sidetable", "garbagecan"),
        ("dresser", "shelf", "safe", "armchair"),
    ),
    "bathroom": (
        ("countertop", "cabinet", "sinkbasin", "toilet", "towelholder", "garbagecan"),
        ("bathtubbasin", "drawer", "shelf", "dresser"),
    ),
    "livingroom": (
        ("sofa", "coffeetable", "sidetable", "tvstand", "garbagecan"),
        ("armchair", "shelf", "drawer", "cabinet", "diningtable", "dresser"),
    ),
}

_FOOD = frozenset({"countertop", "diningtable", "fridge", "microwave", "sinkbasin", "garbagecan"})
_DISH = frozenset({"countertop", "diningtable", "cabinet", "fridge", "microwave", "sinkbasin", "shelf"})
_COOKWARE = frozenset({"countertop", "diningtable", "cabinet", "fridge", "sinkbasin", "stoveburner"})
_UTENSIL = frozenset({"countertop", "diningtable", "drawer", "sinkbasin"})
_SHAKER = frozenset({"countertop", "diningtable", "cabinet", "drawer", "shelf"})
_SMALL = frozenset({"desk", "sidetable", "dresser", "drawer", "shelf", "coffeetable", "diningtable", "safe"})
_SOFT = frozenset({"bed", "sofa", "armchair"})
_BATH = frozenset({"countertop", "cabinet", "shelf", "toilet", "drawer", "dresser"})

OBJECTS = {
    kind.name: kind
    for kind in (
        ObjectType("apple", _FOOD, cleanable=True, heatable=True, coolable=True),
        ObjectType("tomato", _FOOD, cleanable=True, heatable=True, coolable=True),
        ObjectType("potato", _FOOD, cleanable=True, heatable=True, coolable=True),
        ObjectType("egg", _FOOD, cleanable=True, heatable=True, coolable=True),
        ObjectType("lettuce", _FOOD, cleanable=True, coolable=True),
        ObjectType("bread", _FOOD | {"cabinet", "toaster"}, heatable=True, coolable=True),
        ObjectType("mug", _DISH | {"coffeemachine"}, cleanable=True, heatable=True, coolable=True),
        ObjectType("cup", _DISH | {"coffeemachine"}, cleanable=True, heatable=True, coolable=True),
        ObjectType("plate", _DISH, cleanable=True, heatable=True, coolable=True),
        ObjectType("bowl", _DISH, cleanable=True, coolable=True),
        ObjectType("pan", _COOKWARE, cleanable=True, coolable=True),
        ObjectType("pot", _COOKWARE, cleanable=True, coolable=True),
        ObjectType("kettle", _COOKWARE - {"fridge"}, cleanable=True),
        ObjectType("fork", _UTENSIL, cleanable=True),
        ObjectType("spoon", _UTENSIL, cleanable=True),
        ObjectType("knife", _UTENSIL, cleanable=True),
        ObjectType("butterknife", _UTENSIL, cleanable=True),
        ObjectType("spatula", _UTENSIL, cleanable=True),
        ObjectType("ladle", _UTENSIL, cleanable=True),
        ObjectType("saltshaker", _SHAKER),
        ObjectType("peppershaker", _SHAKER),
        ObjectType("dishsponge", _UTENSIL | {"cabinet", "bathtubbasin", "toilet"}, cleanable=True),
        ObjectType("book", _SMALL | {"bed", "sofa"}),
        ObjectType("pen", _SMALL | {"garbagecan"}),
        ObjectType("pencil", _SMALL | {"garbagecan"}),
        ObjectType("cd", _SMALL | {"garbagecan"}),
        ObjectType("cellphone", _SMALL | _SOFT),
        ObjectType("keychain", _SMALL | {"sofa", "armchair"}),
        ObjectType("creditcard", _SMALL | {"sofa", "armchair", "garbagecan"}),
        ObjectType("alarmclock", _SMALL - {"safe"}),
        ObjectType("watch", _SMALL | {"tvstand"}),
        ObjectType("laptop", (_SMALL - {"drawer", "safe"}) | _SOFT),
        ObjectType("remotecontrol", _SMALL | _SOFT | {"tvstand"}),
        ObjectType("pillow", _SOFT),
        ObjectType("newspaper", _SMALL | _SOFT | {"garbagecan"}),
        ObjectType("vase", (_SMALL - {"drawer"}) | {"tvstand"}),
        ObjectType("statue", (_SMALL - {"drawer"}) | {"tvstand"}),
        ObjectType("box", (_SMALL - {"drawer"}) | _SOFT),
        ObjectType("soapbar", _BATH | {"sinkbasin", "bathtubbasin", "garbagecan"}, cleanable=True),
        ObjectType("soapbottle", _BATH | {"garbagecan"}),
        ObjectType("spraybottle", _BATH | {"garbagecan"}),
        ObjectType("cloth", _BATH | {"sinkbasin", "bathtubbasin", "garbagecan"}, cleanable=True),
        ObjectType("handtowel", _BATH | {"towelholder"}),
        ObjectType("towel", _BATH | {"towelholder"}),
        ObjectType("toiletpaper", _BATH | {"garbagecan"}),
        ObjectType("candle", _BATH | {"bathtubbasin"}),
        ObjectType("tissuebox", _BATH | _SMALL),
    )
}

LAMPS = {
    "desklamp": LampType("desklamp", frozenset({"desk", "sidetable", "dresser"})),
    "floorlamp": LampType("floorlamp", frozenset({"sofa", "armchair", "sidetable"})),
}

#: The appliance each change needs, and the adjective of a changed object.
CHANGES = {"clean": ("sinkbasin", "clean"), "heat": ("microwave", "hot"), "cool": ("fridge", "cool")}
