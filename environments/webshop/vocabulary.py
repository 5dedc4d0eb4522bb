"""The word lists the generated WebShop catalog is made of.

Every product of :class:`~agentgym.environments.webshop.catalog.GeneratedCatalog` belongs to
one :class:`ProductType` of :data:`PRODUCT_TYPES` (about 20 per category): its category path,
its search query, the nouns and descriptors its titles use, the attribute pool its
attributes are drawn from, the options it may offer (each from an :class:`OptionPool`), its
price band and what it is used for. Lists are written as ``|``-separated strings to keep the
table readable; :func:`_parse` turns them into tuples once, at import.

Conventions the engine and the goals rely on:

* option names are lower case (``size``, ``color``, ``flavor name``, ``scent``, ``style``,
  ``capacity``) and option values are lower case with no ``/`` and no surrounding spaces, so
  the original WebShop's cleaning (``value.strip().replace('/', ' | ').lower()``) leaves
  them unchanged;
* attributes are lower case phrases such as ``sulfate free`` or ``noise cancelling``;
* a goal noun is written ``DETERMINER|NOUN`` (``a|shampoo``, ``a pair of|running shoes``,
  ``|hiking socks``): goals put attribute adjectives between the two parts.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OptionPool:
    """The values one option may take and how a product picks its subset.

    ``window``: a run of consecutive values (sizes 6-10, small to x-large); ``subset``:
    any values, kept in pool order (colors, flavors). A product offers between ``low`` and
    ``high`` values.
    """

    values: tuple[str, ...]
    kind: str  # "window" or "subset"
    low: int
    high: int


@dataclass(frozen=True)
class OptionSpec:
    """An option a product type may offer: its name, pool, and how often products offer it."""

    name: str
    pool: OptionPool
    probability: float


@dataclass(frozen=True)
class ProductType:
    """One kind of product (e.g. shampoo, men's running shoes, office chairs)."""

    category: str  # one of data.CATEGORIES
    query: str  # the search query that finds it, as the original's ``query`` field
    path: str  # "Beauty & Personal Care › Hair Care › Shampoos"
    nouns: tuple[str, ...]  # title head nouns, title case
    goal_nouns: tuple[tuple[str, str], ...]  # (determiner, noun) for instructions
    leads: tuple[str, ...]  # what follows the brand in titles ("Women's", "") ...
    words: tuple[str, ...]  # title descriptors
    extras: tuple[str, ...]  # title endings ("with Pockets", "for Dry Hair")
    attributes: tuple[str, ...]
    options: tuple[OptionSpec, ...]
    price: tuple[float, float]  # typical low and high price in dollars
    uses: tuple[str, ...]  # "everyday washing", "home office" ...
    weight: float


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split("|")) if text else ()


def _pool(values: str, kind: str, low: int, high: int) -> OptionPool:
    parsed = _split(values)
    return OptionPool(parsed, kind, min(low, len(parsed)), min(high, len(parsed)))


# ---- option pools ----------------------------------------------------------------------------

POOLS: dict[str, OptionPool] = {
    # fashion
    "apparel_size": _pool(
        "xx-small|x-small|small|medium|large|x-large|xx-large|3x-large|4x-large|5x-large", "window", 4, 8
    ),
    "men_shoe_size": _pool("7|7.5|8|8.5|9|9.5|10|10.5|11|11.5|12|13|14|15", "window", 6, 12),
    "women_shoe_size": _pool("5|5.5|6|6.5|7|7.5|8|8.5|9|9.5|10|10.5|11|12", "window", 6, 12),
    "kids_shoe_size": _pool(
        "9 toddler|10 toddler|11 little kid|12 little kid|13 little kid|1 little kid|2 little kid|3 big kid|"
        "4 big kid|5 big kid|6 big kid|7 big kid",
        "window",
        5,
        9,
    ),
    "men_jeans_size": _pool(
        "28w x 30l|29w x 30l|30w x 30l|30w x 32l|31w x 32l|32w x 30l|32w x 32l|33w x 32l|34w x 30l|34w x 32l|"
        "34w x 34l|36w x 30l|36w x 32l|38w x 32l|40w x 32l|42w x 32l",
        "window",
        6,
        12,
    ),
    "women_numeric_size": _pool("0|2|4|6|8|10|12|14|16|18|20|22", "window", 5, 9),
    "bra_size": _pool("32a|32b|32c|34a|34b|34c|34d|36b|36c|36d|38c|38d|40d|42d", "window", 5, 10),
    "sock_size": _pool("small|medium|large|x-large", "window", 2, 3),
    "kids_size": _pool("2t|3t|4t|5|6|7|8|10|12|14|16", "window", 4, 8),
    "apparel_color": _pool(
        "black|white|navy blue|grey|heather grey|charcoal|red|burgundy|wine red|pink|light pink|hot pink|purple|"
        "lavender|blue|light blue|royal blue|sky blue|teal|green|army green|olive|mint green|khaki|beige|brown|"
        "coffee|camel|yellow|mustard|orange|coral|apricot|multicolor|leopard|floral|striped|dark grey|ivory|"
        "dusty rose",
        "subset",
        2,
        10,
    ),
    "dress_color": _pool(
        "black|white|navy blue|red|wine red|burgundy|pink|blush pink|dusty rose|purple|lavender|royal blue|"
        "sky blue|teal|emerald green|sage green|olive|khaki|beige|apricot|yellow|mustard|orange|coral|"
        "black floral|blue floral|red floral|white floral|leopard|polka dot|striped|tie dye|multicolor",
        "subset",
        2,
        10,
    ),
    "denim_color": _pool(
        "light wash|medium wash|dark wash|black|grey|stonewash|vintage blue|indigo|rinse|white|acid wash",
        "subset",
        2,
        6,
    ),
    "shoe_color": _pool(
        "black|white|all black|black white|grey|light grey|navy|blue|royal blue|red|pink|beige|brown|olive|"
        "white grey|black red|triple white|dark grey|khaki|purple|mint|orange",
        "subset",
        2,
        8,
    ),
    "leather_color": _pool(
        "black|brown|dark brown|tan|cognac|burgundy|navy|grey|taupe|chestnut|white|nude", "subset", 2, 6
    ),
    "bag_color": _pool(
        "black|brown|beige|khaki|pink|red|white|grey|green|apricot|wine red|blue|navy|caramel|coffee|"
        "light purple|cream|silver|gold",
        "subset",
        2,
        8,
    ),
    "lens_color": _pool(
        "black grey|tortoise brown|gold green|silver mirror|blue mirror|pink|brown gradient|clear|red mirror",
        "subset",
        2,
        6,
    ),
    "sock_pack": _pool("3 pairs|5 pairs|6 pairs|8 pairs|10 pairs|12 pairs", "window", 2, 4),
    # beauty
    "liquid_size": _pool(
        "1 fl oz|2 fl oz|3.4 fl oz|6.8 fl oz|8 fl oz|10 fl oz|12 fl oz|13.5 fl oz|16 fl oz|16.9 fl oz|"
        "25.4 fl oz|33.8 fl oz",
        "window",
        2,
        4,
    ),
    "cream_size": _pool("0.5 ounce|1 ounce|1.7 ounce|2 ounce|2.5 ounce|3.4 ounce|4 ounce|8 ounce", "window", 2, 3),
    "fragrance_size": _pool("0.33 fl oz|1 fl oz|1.7 fl oz|2.5 fl oz|3.4 fl oz|4.2 fl oz|6.7 fl oz", "window", 2, 4),
    "beauty_pack": _pool("pack of 1|pack of 2|pack of 3|pack of 4|pack of 6|pack of 12", "window", 2, 4),
    "scent": _pool(
        "lavender|unscented|coconut|vanilla|eucalyptus|rose|citrus|fresh linen|sandalwood|peppermint|tea tree|"
        "ocean breeze|cherry blossom|jasmine|cucumber melon|amber|green tea|honey almond|cedarwood|fresh",
        "subset",
        2,
        6,
    ),
    "lip_shade": _pool(
        "ruby red|classic red|cherry|nude|pink nude|rosewood|mauve|berry|deep plum|coral|peach|hot pink|"
        "brick red|caramel|chocolate|wine|fuchsia|soft pink|cinnamon|clear",
        "subset",
        3,
        10,
    ),
    "foundation_shade": _pool(
        "porcelain|fair|ivory|light|light beige|natural beige|warm sand|medium|medium beige|golden|tan|"
        "caramel|honey|deep|mocha|espresso",
        "window",
        4,
        10,
    ),
    "nail_color": _pool(
        "classic red|nude|ballet pink|hot pink|coral|burgundy|black|white|navy|teal|mint|lilac|purple|gold|"
        "silver|glitter|rose gold|cherry red|peach|taupe|sky blue|emerald|orange|french tip",
        "subset",
        3,
        12,
    ),
    "eye_color": _pool("black|brown|brown black|navy|plum|bronze|clear|green|burgundy", "subset", 2, 5),
    "palette_style": _pool(
        "nude|smoky|warm|cool|rose gold|sunset|glitter|matte|shimmer|neutral|pastel|bold", "subset", 2, 6
    ),
    "hair_color": _pool(
        "jet black|natural black|dark brown|medium brown|chestnut brown|auburn|honey blonde|ash blonde|"
        "platinum blonde|ombre brown|burgundy|silver grey|strawberry blonde|balayage",
        "subset",
        3,
        8,
    ),
    "hair_length": _pool(
        "10 inch|12 inch|14 inch|16 inch|18 inch|20 inch|22 inch|24 inch|26 inch|28 inch|30 inch", "window", 3, 7
    ),
    "lash_style": _pool("natural|wispy|dramatic|cat eye|volume|3d mink|doll eye", "subset", 2, 5),
    "tool_color": _pool("black|white|pink|rose gold|purple|blue|gold|silver|teal", "subset", 2, 5),
    "brush_count": _pool("5 pieces|10 pieces|12 pieces|14 pieces|16 pieces|18 pieces|20 pieces", "window", 1, 3),
    "plate_size": _pool("0.5 inch|1 inch|1.25 inch|1.5 inch|1.75 inch|2 inch", "window", 2, 4),
    "spf": _pool("spf 15|spf 30|spf 45|spf 50|spf 70|spf 100", "window", 2, 4),
    "toothbrush_color": _pool("white|black|pink|blue|green|purple|gray|mint", "subset", 2, 5),
    "count_size": _pool("10 count|15 count|20 count|24 count|30 count|50 count|60 count|100 count", "window", 2, 4),
    # food
    "coffee_flavor": _pool(
        "light roast|medium roast|dark roast|french roast|espresso roast|breakfast blend|house blend|colombian|"
        "decaf|hazelnut|vanilla|caramel|mocha|pumpkin spice|kona blend",
        "subset",
        2,
        7,
    ),
    "coffee_size": _pool(
        "10 ounce|12 ounce|16 ounce|24 ounce|2 pound|32 count|48 count|72 count|96 count", "subset", 2, 4
    ),
    "tea_flavor": _pool(
        "green tea|chamomile|earl grey|english breakfast|peppermint|jasmine|chai|hibiscus|rooibos|matcha|"
        "lemon ginger|oolong|darjeeling|mint green|white tea|variety pack",
        "subset",
        2,
        7,
    ),
    "tea_size": _pool("20 count|40 count|50 count|80 count|100 count|120 count|160 count", "window", 2, 4),
    "bar_flavor": _pool(
        "chocolate chip|peanut butter|peanut butter chocolate|blueberry|almond|oatmeal raisin|dark chocolate sea salt|"
        "cookies and cream|lemon|salted caramel|birthday cake|coconut almond|variety pack|cinnamon roll",
        "subset",
        2,
        7,
    ),
    "snack_pack": _pool(
        "4 count|5 count|6 count|8 count|10 count|12 count|12 count (pack of 2)|15 count|18 count|24 count|"
        "30 count|pack of 36",
        "window",
        2,
        4,
    ),
    "oil_size": _pool(
        "8.5 fl oz|16.9 fl oz|25.3 fl oz|33.8 fl oz|51 fl oz|68 fl oz|101 fl oz|16.9 fl oz (pack of 2)",
        "window",
        2,
        4,
    ),
    "weight_size": _pool(
        "1.5 ounce|2 ounce|3 ounce|4 ounce|5 ounce|6 ounce|8 ounce|10 ounce|12 ounce|16 ounce|1 pound|1.5 pound|"
        "2 pound|3 pound|5 pound",
        "window",
        2,
        4,
    ),
    "pack_count": _pool("pack of 1|pack of 2|pack of 3|pack of 4|pack of 6|pack of 8|pack of 12", "window", 2, 4),
    "chocolate_flavor": _pool(
        "milk chocolate|dark chocolate|white chocolate|caramel|mint|sea salt caramel|hazelnut|raspberry|"
        "orange|almond|peanut butter|extra dark 85%",
        "subset",
        2,
        6,
    ),
    "chips_flavor": _pool(
        "sea salt|original|barbecue|sour cream and onion|salt and vinegar|jalapeno|cheddar|ranch|"
        "honey barbecue|spicy queso|lime|variety pack",
        "subset",
        2,
        6,
    ),
    "nut_flavor": _pool(
        "salted|unsalted|lightly salted|honey roasted|smoked|sea salt and pepper|cinnamon|chili lime|dry roasted",
        "subset",
        2,
        5,
    ),
    "jerky_flavor": _pool(
        "original|teriyaki|peppered|sweet and spicy|hickory smoked|sriracha|black pepper|garlic|habanero",
        "subset",
        2,
        6,
    ),
    "protein_flavor": _pool(
        "chocolate|vanilla|strawberry|cookies and cream|unflavored|chocolate peanut butter|salted caramel|"
        "mocha|banana|birthday cake",
        "subset",
        2,
        6,
    ),
    "protein_size": _pool("1 pound|2 pound|2.5 pound|4 pound|5 pound|10 pound|20 servings|30 servings", "subset", 2, 4),
    "water_flavor": _pool(
        "lime|lemon|grapefruit|black cherry|orange|mango|raspberry|coconut|pineapple|cucumber|unflavored|"
        "watermelon|variety pack",
        "subset",
        2,
        6,
    ),
    "can_pack": _pool(
        "12 fl oz (pack of 8)|12 fl oz (pack of 12)|12 fl oz (pack of 24)|16.9 fl oz (pack of 12)|"
        "8.4 fl oz (pack of 24)",
        "subset",
        2,
        3,
    ),
    "sauce_heat": _pool("mild|medium|hot|extra hot|original|smoky chipotle|garlic|habanero", "subset", 2, 5),
    "spread_style": _pool("creamy|crunchy|extra crunchy|natural creamy|no stir|honey|chocolate", "subset", 2, 4),
    "cereal_flavor": _pool(
        "original|honey nut|cinnamon|chocolate|berry|vanilla almond|maple pecan|strawberry|banana nut|peanut butter",
        "subset",
        2,
        5,
    ),
    "cookie_flavor": _pool(
        "chocolate chip|double chocolate|oatmeal raisin|snickerdoodle|shortbread|ginger snap|lemon|"
        "peanut butter|sugar|variety pack",
        "subset",
        2,
        5,
    ),
    "candy_flavor": _pool(
        "assorted fruit|sour|strawberry|cherry|watermelon|peach|green apple|blue raspberry|tropical|cola|original",
        "subset",
        2,
        6,
    ),
    "spice_kind": _pool(
        "original|garlic|smoked|spicy|lemon pepper|all purpose|salt free|chili lime|everything bagel|mesquite",
        "subset",
        2,
        5,
    ),
    "pasta_shape": _pool(
        "spaghetti|penne|rotini|fusilli|elbow|linguine|fettuccine|rigatoni|farfalle|shells|lasagna", "subset", 2, 6
    ),
    "rice_style": _pool("white|brown|jasmine|basmati|wild|sushi|arborio|black", "subset", 2, 4),
    "honey_style": _pool("raw|clover|wildflower|manuka|orange blossom|buckwheat|creamed", "subset", 2, 4),
    "flour_style": _pool(
        "all purpose|almond|coconut|oat|whole wheat|bread|cake|cassava|gluten free 1 to 1", "subset", 2, 4
    ),
    "baby_flavor": _pool(
        "apple|banana|pear|sweet potato|carrot|mango|blueberry|pumpkin|spinach apple|variety pack", "subset", 2, 5
    ),
    "syrup_style": _pool("grade a amber|grade a dark|very dark|sugar free|original|butter pecan", "subset", 2, 4),
    # furniture
    "wood_color": _pool(
        "black|white|espresso|walnut|rustic brown|grey|natural|oak|cherry|vintage brown|greige|white oak|"
        "dark walnut|light grey|beige|weathered grey|teak|mahogany|black oak",
        "subset",
        2,
        6,
    ),
    "upholstery_color": _pool(
        "grey|dark grey|light grey|beige|cream|navy blue|green|emerald green|teal|blue|pink|mustard yellow|"
        "black|brown|white|orange|burgundy|charcoal|camel|sage",
        "subset",
        2,
        7,
    ),
    "chair_color": _pool("black|white|grey|blue|pink|red|green|black and red|brown|beige", "subset", 2, 5),
    "bed_size": _pool("twin|twin xl|full|queen|king|california king", "window", 2, 5),
    "desk_width": _pool("32 inch|40 inch|44 inch|47 inch|55 inch|63 inch|71 inch", "window", 2, 4),
    "stool_height": _pool(
        "24 inch counter height|26 inch counter height|29 inch bar height|30 inch bar height|adjustable height",
        "subset",
        2,
        3,
    ),
    "shelf_tiers": _pool("3-tier|4-tier|5-tier|6-tier|7-tier", "window", 2, 4),
    "furniture_set": _pool("1 piece|set of 2|set of 4|set of 6", "window", 2, 3),
    "rug_size": _pool(
        "2 x 3 ft|3 x 5 ft|4 x 6 ft|5 x 7 ft|6 x 9 ft|8 x 10 ft|9 x 12 ft|runner 2 x 8 ft", "window", 3, 6
    ),
    "mattress_thickness": _pool("6 inch|8 inch|10 inch|12 inch|14 inch", "window", 2, 4),
    "furniture_style": _pool(
        "modern|industrial|farmhouse|mid-century|classic|with drawers|with storage|with shelves|with led lights|"
        "with wheels",
        "subset",
        2,
        4,
    ),
    "curtain_size": _pool(
        "42 x 63 inch|52 x 63 inch|52 x 84 inch|52 x 95 inch|52 x 108 inch|100 x 84 inch", "window", 2, 5
    ),
    "cabinet_doors": _pool("2 doors|3 doors|4 doors|2 doors 2 drawers|6 drawers", "subset", 2, 3),
    # electronics
    "electronics_color": _pool(
        "black|white|silver|space gray|rose gold|blue|red|green|pink|purple|gold|midnight green|navy blue|"
        "grey|beige|sage|midnight",
        "subset",
        2,
        6,
    ),
    "case_color": _pool(
        "clear|black|matte black|navy blue|pink|purple|red|green|frosted clear|marble|glitter|"
        "transparent blue|lavender|mint|brown leather",
        "subset",
        2,
        8,
    ),
    "phone_model": _pool(
        "iphone 15|iphone 15 plus|iphone 15 pro|iphone 15 pro max|iphone 14|iphone 14 plus|iphone 14 pro|"
        "iphone 14 pro max|iphone 13|iphone 13 mini|iphone se|galaxy s24|galaxy s24 ultra|galaxy s23|"
        "galaxy a54|pixel 8|pixel 8 pro|pixel 7a",
        "subset",
        2,
        8,
    ),
    "tablet_model": _pool(
        "ipad 10th generation|ipad 9th generation|ipad air 5|ipad pro 11 inch|ipad pro 12.9 inch|ipad mini 6|"
        "galaxy tab s9|galaxy tab a8|fire hd 10",
        "subset",
        2,
        5,
    ),
    "storage_capacity": _pool("16gb|32gb|64gb|128gb|256gb|512gb|1tb|2tb|4tb|5tb|8tb", "window", 2, 5),
    "drive_capacity": _pool("500gb|1tb|2tb|4tb|5tb|6tb|8tb|12tb", "window", 2, 4),
    "cable_length": _pool("1 ft|3 ft|6 ft|6.6 ft|10 ft|15 ft|25 ft|50 ft", "window", 2, 5),
    "pack_n": _pool("1 pack|2 pack|3 pack|4 pack|5 pack|10 pack", "window", 2, 4),
    "band_size": _pool("38mm|40mm|41mm|42mm|44mm|45mm|49mm", "subset", 2, 4),
    "screen_size": _pool("21.5 inch|24 inch|27 inch|32 inch|34 inch|43 inch|50 inch|55 inch|65 inch", "window", 2, 4),
    "mount_size": _pool("13-42 inch|26-55 inch|32-65 inch|37-75 inch|42-90 inch", "subset", 1, 3),
    "charger_power": _pool("20w|25w|30w|35w|45w|65w|100w|140w", "window", 2, 4),
    "battery_capacity": _pool("5000mah|10000mah|20000mah|26800mah|30000mah|40000mah", "window", 2, 4),
    "resolution": _pool("720p|1080p|2k|2.5k|4k", "window", 2, 3),
    "switch_type": _pool("red switch|blue switch|brown switch|silent switch|optical switch", "subset", 2, 4),
    "connectivity": _pool("wired|wireless|bluetooth|2.4ghz wireless|usb-c wired", "subset", 2, 3),
    "mic_style": _pool(
        "with microphone|without microphone|with charging case|with noise cancelling mic", "subset", 1, 2
    ),
    "camera_pack": _pool("1 camera|2 cameras|3 cameras|4 cameras", "window", 2, 3),
    "speaker_style": _pool("standard|with radio|with lights|waterproof edition|party edition", "subset", 1, 3),
    "remote_model": _pool(
        "samsung tv|lg tv|sony tv|vizio tv|tcl roku tv|hisense tv|insignia fire tv|universal", "subset", 2, 5
    ),
}


# ---- brands ----------------------------------------------------------------------------------

BRAND_HEADS = _split(
    "Lu|Ve|Ka|Zen|Ora|Mi|Tro|Bel|Nor|Ax|Qui|Sol|Vi|Ari|Del|Fen|Gal|Hal|Io|Jun|Kor|Lem|Mar|Nix|Oak|Pax|Rev|Sky|"
    "Tal|Uma|Vex|Wil|Yor|Zel|Bri|Cor|Dan|Ev|Fl|Gr"
)
BRAND_TAILS = _split("ora|ix|ana|elle|tec|ly|vo|nova|ine|ari|ex|ivo|sen|ara|era|io|us|ent|ica|on|away|ford|wood|ea")
BRAND_SUFFIXES: dict[str, tuple[str, ...]] = {
    "beauty": _split("Beauty|Naturals|Labs|Botanics|Skin|Cosmetics|Organics"),
    "food": _split("Farms|Kitchen|Foods|Pantry|Harvest|Gourmet|Provisions"),
    "fashion": _split("Apparel|Wear|Co.|Studio|Athletics|Outfitters"),
    "furniture": _split("Home|Living|Furniture|Designs|Interiors|Woodworks"),
    "electronics": _split("Tech|Audio|Electronics|Labs|Digital|Gear"),
}

#: Words kept upper case (or as written here) when attributes are title-cased in titles.
TITLE_WORDS: dict[str, str] = {
    word.lower(): word
    for word in _split(
        "USB|USB-C|HDMI|LED|LCD|HD|UV|SPF|GMO|USDA|PU|BPA|4K|2K|1080p|720p|TV|AC|DC|RGB|PC|iPhone|iPad|MagSafe|"
        "UPF|3D|XL|mAh|Wi-Fi|WiFi|DIY|IPX7|IPX5|5G|PD|QC|EVA|TPU|MDF|OLED|ANC|a|and|of|for|with|to|in|the|or"
    )
}

# ---- product types ---------------------------------------------------------------------------

_CATEGORY_WEIGHTS = {"fashion": 0.28, "beauty": 0.22, "electronics": 0.20, "food": 0.15, "furniture": 0.15}

_BEAUTY = "Beauty & Personal Care"
_FOOD = "Grocery & Gourmet Food"
_FASHION = "Clothing, Shoes & Jewelry"
_FURNITURE = "Home & Kitchen › Furniture"
_ELECTRONICS = "Electronics"
_PHONE_ACCESSORIES = f"{_ELECTRONICS} › Cell Phones & Accessories › Accessories"
_PERIPHERALS = f"{_ELECTRONICS} › Computers & Accessories › Computer Accessories & Peripherals"

_TYPE_TABLE: list[dict] = [
    # ---------------------------------------------------------------- beauty
    dict(
        cat="beauty",
        query="shampoo",
        path=f"{_BEAUTY} › Hair Care › Shampoo & Conditioner › Shampoos",
        nouns="Shampoo|Shampoo for Women|Hair Shampoo|Daily Shampoo",
        goal="a|shampoo|a bottle of|shampoo|some|shampoo",
        words="Moisturizing|Volumizing|Clarifying|Argan Oil|Tea Tree|Coconut|Biotin|Keratin|Color Safe|Hydrating|"
        "Rosemary Mint|Repairing",
        extras="for Dry Damaged Hair|for Fine Hair|for Curly Hair|for Men and Women|for All Hair Types",
        attrs="sulfate free|paraben free|natural ingredients|cruelty free|hair growth|dry hair|damaged hair|"
        "color treated|hair loss|long lasting|fine hair|silicone free|vegan|anti dandruff",
        opts="size:liquid_size:0.8|scent:scent:0.3|style:beauty_pack:0.2",
        price="6 48",
        uses="everyday washing|salon-quality care at home|healthy looking hair",
    ),
    dict(
        cat="beauty",
        query="conditioner",
        path=f"{_BEAUTY} › Hair Care › Shampoo & Conditioner › Conditioners",
        nouns="Conditioner|Deep Conditioner|Leave-In Conditioner|Hair Conditioner",
        goal="a|conditioner|a bottle of|conditioner|some|leave-in conditioner",
        words="Hydrating|Detangling|Argan Oil|Coconut Milk|Shea Butter|Protein|Smoothing|Curl Defining|Avocado",
        extras="for Frizzy Hair|for Dry Hair|for Curly Hair|for Color Treated Hair",
        attrs="sulfate free|paraben free|natural ingredients|dry hair|damaged hair|curly hair|cruelty free|"
        "silicone free|frizzy hair|color treated|vegan|long lasting",
        opts="size:liquid_size:0.8|scent:scent:0.3",
        price="6 42",
        uses="daily conditioning|soft and manageable hair",
    ),
    dict(
        cat="beauty",
        query="hair oil",
        path=f"{_BEAUTY} › Hair Care › Hair Treatment Oils",
        nouns="Hair Oil|Hair Serum|Hair Growth Oil|Scalp Oil",
        goal="a|hair oil|a bottle of|hair serum|some|hair growth oil",
        words="Rosemary|Argan|Castor|Jojoba|Batana|Peppermint|Nourishing|Lightweight|Anti Frizz",
        extras="for Hair Growth|for Split Ends|for Dry Scalp|for Thicker Hair",
        attrs="hair growth|hair loss|natural ingredients|dry scalp|damaged hair|split ends|cruelty free|"
        "paraben free|easy apply|non greasy|long lasting|vegan",
        opts="size:cream_size:0.6|style:beauty_pack:0.3",
        price="8 36",
        uses="a healthy scalp|shine without grease",
    ),
    dict(
        cat="beauty",
        query="face moisturizer",
        path=f"{_BEAUTY} › Skin Care › Face › Creams & Moisturizers › Face Moisturizers",
        nouns="Face Moisturizer|Face Cream|Day Cream|Night Cream|Moisturizing Cream",
        goal="a|face moisturizer|a|face cream|a jar of|face cream",
        words="Hydrating|Anti Aging|Retinol|Vitamin C|Collagen|Ceramide|Oil-Free|Whipped|Brightening|Peptide",
        extras="for Dry Skin|for Sensitive Skin|for Women and Men|for Oily Skin",
        attrs="dry skin|sensitive skin|oily skin|fine lines|anti aging|hyaluronic acid|fragrance free|cruelty free|"
        "paraben free|dermatologist tested|non comedogenic|natural ingredients|vitamin c|long lasting",
        opts="size:cream_size:0.7|style:beauty_pack:0.2",
        price="9 65",
        uses="a smooth and even complexion|all day hydration",
    ),
    dict(
        cat="beauty",
        query="face serum",
        path=f"{_BEAUTY} › Skin Care › Face › Serums",
        nouns="Face Serum|Facial Serum|Serum|Vitamin C Serum",
        goal="a|face serum|a|facial serum|a bottle of|serum",
        words="Vitamin C|Hyaluronic Acid|Niacinamide|Retinol|Brightening|Firming|Peptide|Glow|Salicylic Acid",
        extras="for Face|for Dark Spots|for Fine Lines and Wrinkles|for All Skin Types",
        attrs="dark spots|fine lines|hyaluronic acid|vitamin c|anti aging|dry skin|sensitive skin|cruelty free|"
        "paraben free|fragrance free|oil free|natural ingredients|dermatologist tested",
        opts="size:cream_size:0.6|style:beauty_pack:0.3",
        price="10 60",
        uses="brighter looking skin|a simple skincare routine",
    ),
    dict(
        cat="beauty",
        query="facial cleanser",
        path=f"{_BEAUTY} › Skin Care › Face › Cleansers › Washes",
        nouns="Facial Cleanser|Face Wash|Foaming Cleanser|Gel Cleanser|Cleansing Balm",
        goal="a|facial cleanser|a|face wash|some|face wash",
        words="Gentle|Foaming|Hydrating|Salicylic Acid|Charcoal|Tea Tree|Oil Control|Exfoliating|Cream",
        extras="for Sensitive Skin|for Acne Prone Skin|for Oily Skin|for Men and Women",
        attrs="sensitive skin|oily skin|dry skin|acne prone|fragrance free|paraben free|cruelty free|"
        "deep cleansing|natural ingredients|non comedogenic|sulfate free|dermatologist tested",
        opts="size:liquid_size:0.7|style:beauty_pack:0.3",
        price="6 35",
        uses="morning and night cleansing|a fresh clean feel",
    ),
    dict(
        cat="beauty",
        query="sunscreen",
        path=f"{_BEAUTY} › Skin Care › Sunscreens & Tanning Products › Sunscreens",
        nouns="Sunscreen|Sunscreen Lotion|Face Sunscreen|Mineral Sunscreen|Sunscreen Spray",
        goal="a|sunscreen|some|sunscreen|a bottle of|sunscreen lotion",
        words="Broad Spectrum|Mineral|Zinc Oxide|Sheer|Sport|Tinted|Ultra Light|Daily",
        extras="for Face and Body|for Sensitive Skin|for Kids|for Sports",
        attrs="sun protection|water resistant|reef safe|sensitive skin|oil free|fragrance free|non greasy|"
        "broad spectrum|cruelty free|paraben free|travel size|long lasting",
        opts="style:spf:0.7|size:liquid_size:0.5",
        price="7 38",
        uses="days at the beach|daily outdoor protection",
    ),
    dict(
        cat="beauty",
        query="lipstick",
        path=f"{_BEAUTY} › Makeup › Lips › Lipstick",
        nouns="Lipstick|Matte Lipstick|Liquid Lipstick|Lip Stain|Lipstick Set",
        goal="a|lipstick|a tube of|lipstick|a|liquid lipstick",
        words="Matte|Velvet|Satin|Long Wear|Moisturizing|Creamy|High Pigment|Waterproof|Nude",
        extras="for Women|with Vitamin E|Set of 6",
        attrs="long lasting|high pigmented|waterproof|cruelty free|non stick|moisturizing|paraben free|"
        "transfer proof|vegan|easy apply|smudge proof|lightweight",
        opts="color:lip_shade:0.9|style:beauty_pack:0.2",
        price="5 32",
        uses="a bold everyday look|all day color",
    ),
    dict(
        cat="beauty",
        query="lip gloss",
        path=f"{_BEAUTY} › Makeup › Lips › Lip Glosses",
        nouns="Lip Gloss|Lip Oil|Tinted Lip Balm|Lip Plumper",
        goal="a|lip gloss|some|lip gloss|a|tinted lip balm",
        words="Shimmer|Glossy|Plumping|Hydrating|Clear|Tinted|Jelly|Vitamin E",
        extras="for Women|for Dry Lips|Set of 4",
        attrs="long lasting|non sticky|moisturizing|cruelty free|dry lips|natural ingredients|vegan|"
        "paraben free|easy carry|high shine|lightweight",
        opts="color:lip_shade:0.9",
        price="4 24",
        uses="a natural glossy finish|soft hydrated lips",
    ),
    dict(
        cat="beauty",
        query="foundation",
        path=f"{_BEAUTY} › Makeup › Face › Foundation",
        nouns="Foundation|Liquid Foundation|Foundation Makeup|Cushion Foundation|Powder Foundation",
        goal="a|foundation|a bottle of|liquid foundation|some|foundation",
        words="Full Coverage|Matte|Dewy|Lightweight|Oil Free|Longwear|Natural Finish|Serum",
        extras="for Oily Skin|for Mature Skin|with SPF 15|for All Skin Types",
        attrs="full coverage|long lasting|oil free|natural looking|oily skin|dry skin|cruelty free|paraben free|"
        "fragrance free|waterproof|lightweight|non comedogenic",
        opts="color:foundation_shade:0.9",
        price="6 45",
        uses="a flawless base|all day wear",
    ),
    dict(
        cat="beauty",
        query="mascara",
        path=f"{_BEAUTY} › Makeup › Eyes › Mascara",
        nouns="Mascara|Lengthening Mascara|Volumizing Mascara|Lash Primer",
        goal="a|mascara|a tube of|mascara|some|mascara",
        words="Volumizing|Lengthening|Curling|Waterproof|4D Silk Fiber|Tubing|Smudge Proof",
        extras="for Sensitive Eyes|for Natural Lashes|Pack of 2",
        attrs="long lasting|waterproof|smudge proof|cruelty free|sensitive eyes|clump free|paraben free|"
        "easy remove|natural looking|vegan",
        opts="color:eye_color:0.7|style:beauty_pack:0.2",
        price="5 28",
        uses="fuller looking lashes|a dramatic eye look",
    ),
    dict(
        cat="beauty",
        query="eyeshadow palette",
        path=f"{_BEAUTY} › Makeup › Eyes › Eyeshadow",
        nouns="Eyeshadow Palette|Eye Shadow Palette|Eyeshadow Kit",
        goal="an|eyeshadow palette|an|eye shadow palette|a|makeup palette",
        words="35 Color|18 Color|Matte and Shimmer|Nude|Glitter|Professional|Highly Pigmented|Smoky",
        extras="for Women|with Mirror|Makeup Gift Set",
        attrs="high pigmented|long lasting|easy blend|cruelty free|waterproof|travel size|paraben free|"
        "easy carry|talc free|vegan",
        opts="style:palette_style:0.8",
        price="7 49",
        uses="day and night looks|creative eye makeup",
    ),
    dict(
        cat="beauty",
        query="nail polish",
        path=f"{_BEAUTY} › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish",
        nouns="Nail Polish|Gel Nail Polish|Nail Polish Set|Nail Lacquer",
        goal="a|nail polish|a bottle of|nail polish|some|gel nail polish",
        words="Gel|Quick Dry|Glitter|Long Lasting|Chip Resistant|Glossy|Soak Off UV",
        extras="for Women|Set of 6|for Nail Art|Salon Manicure",
        attrs="long lasting|quick dry|nail art|non toxic|cruelty free|chip resistant|high shine|easy apply|"
        "soak off|vegan",
        opts="color:nail_color:0.9|style:beauty_pack:0.2",
        price="4 30",
        uses="at-home manicures|salon quality nails",
    ),
    dict(
        cat="beauty",
        query="women's perfume",
        path=f"{_BEAUTY} › Fragrance › Women's › Eau de Parfum",
        nouns="Eau de Parfum|Perfume|Eau de Toilette Spray|Fragrance Mist",
        goal="a|perfume|a bottle of|perfume|a|women's fragrance",
        words="Floral|Fresh|Sweet|Warm Vanilla|Citrus|Musk|Oud|Rose|Jasmine",
        extras="for Women|Spray for Women|Gift Set",
        attrs="long lasting|fine mist|travel size|easy carry|natural ingredients|cruelty free|alcohol free|"
        "gift set|floral scent|vegan",
        opts="size:fragrance_size:0.8",
        price="12 120",
        uses="everyday wear|special evenings",
    ),
    dict(
        cat="beauty",
        query="men's cologne",
        path=f"{_BEAUTY} › Fragrance › Men's › Cologne",
        nouns="Cologne|Eau de Toilette|Cologne Spray|Body Spray",
        goal="a|cologne|a bottle of|men's cologne|some|cologne",
        words="Woody|Fresh|Aquatic|Spicy|Citrus|Leather|Sandalwood|Classic",
        extras="for Men|Spray for Men|Gift Set for Men",
        attrs="long lasting|fine mist|travel size|easy carry|woody scent|fresh scent|alcohol free|gift set|"
        "cruelty free",
        opts="size:fragrance_size:0.8",
        price="12 110",
        uses="the office|a night out",
    ),
    dict(
        cat="beauty",
        query="body wash",
        path=f"{_BEAUTY} › Personal Care › Bath & Bathing Accessories › Bath › Body Washes",
        nouns="Body Wash|Shower Gel|Moisturizing Body Wash|Body Wash for Men",
        goal="a|body wash|a bottle of|body wash|some|shower gel",
        words="Moisturizing|Exfoliating|Hydrating|Shea Butter|Charcoal|Oatmeal|Refreshing|Coconut",
        extras="for Women|for Men|for Dry Skin|for Sensitive Skin",
        attrs="sulfate free|paraben free|dry skin|sensitive skin|natural ingredients|cruelty free|long lasting|"
        "moisturizing|vegan|fragrance free|dermatologist tested",
        opts="size:liquid_size:0.6|scent:scent:0.6|style:beauty_pack:0.2",
        price="5 28",
        uses="a refreshing shower|soft, clean skin",
    ),
    dict(
        cat="beauty",
        query="body lotion",
        path=f"{_BEAUTY} › Skin Care › Body › Moisturizers › Lotions",
        nouns="Body Lotion|Hand and Body Lotion|Body Butter|Body Cream",
        goal="a|body lotion|a bottle of|body lotion|some|body butter",
        words="Daily Moisture|Shea Butter|Cocoa Butter|Intensive Repair|Whipped|Aloe|Oatmeal|Non-Greasy",
        extras="for Dry Skin|for Women and Men|for Sensitive Skin",
        attrs="dry skin|sensitive skin|non greasy|fragrance free|paraben free|long lasting|natural ingredients|"
        "cruelty free|shea butter|dermatologist tested|fast absorbing",
        opts="size:liquid_size:0.6|scent:scent:0.5",
        price="5 30",
        uses="all day moisture|smooth, soft skin",
    ),
    dict(
        cat="beauty",
        query="deodorant",
        path=f"{_BEAUTY} › Personal Care › Deodorants & Antiperspirants",
        nouns="Deodorant|Antiperspirant Deodorant|Deodorant Stick|Natural Deodorant",
        goal="a|deodorant|a stick of|deodorant|some|natural deodorant",
        words="Aluminum Free|Clinical Strength|Invisible Solid|Natural|Fresh|Sport|48 Hour",
        extras="for Women|for Men|for Sensitive Skin",
        attrs="aluminum free|long lasting|sensitive skin|natural ingredients|paraben free|cruelty free|"
        "baking soda free|travel size|vegan|odor protection",
        opts="scent:scent:0.8|style:beauty_pack:0.5",
        price="4 22",
        uses="all day freshness|active days",
    ),
    dict(
        cat="beauty",
        query="hair straightener",
        path=f"{_BEAUTY} › Hair Care › Styling Tools & Appliances › Flat Irons",
        nouns="Hair Straightener|Flat Iron|Straightener Brush|Hair Straightener and Curler",
        goal="a|hair straightener|a|flat iron|a|straightener",
        words="Ceramic|Titanium|Professional|Ionic|2 in 1|Mini|Cordless",
        extras="for All Hair Types|with Adjustable Temperature|for Travel",
        attrs="ceramic tourmaline|adjustable temperature|fast heating|dual voltage|auto shut off|easy use|"
        "heat protection|travel size|damaged hair|long lasting|stainless steel",
        opts="size:plate_size:0.6|color:tool_color:0.6",
        price="15 120",
        uses="sleek styles at home|quick touch-ups",
    ),
    dict(
        cat="beauty",
        query="makeup brushes",
        path=f"{_BEAUTY} › Tools & Accessories › Makeup Brushes & Tools › Brush Sets",
        nouns="Makeup Brush Set|Makeup Brushes|Foundation Brush|Brush Set",
        goal="a|makeup brush set|some|makeup brushes|a set of|makeup brushes",
        words="Professional|Premium Synthetic|Kabuki|Travel|Vegan|Soft",
        extras="with Case|with Sponge|for Foundation Powder Concealer",
        attrs="easy carry|synthetic hair|cruelty free|travel size|soft bristles|easy clean|high quality|"
        "storage case|vegan|long lasting",
        opts="size:brush_count:0.6|color:tool_color:0.6",
        price="6 40",
        uses="flawless makeup application|everyday makeup",
    ),
    dict(
        cat="beauty",
        query="hair extensions",
        path=f"{_BEAUTY} › Hair Care › Hair Extensions, Wigs & Accessories › Hair Extensions",
        nouns="Hair Extensions|Clip in Hair Extensions|Tape in Hair Extensions|Wig|Lace Front Wig",
        goal="some|hair extensions|a set of|clip in hair extensions|a|wig",
        words="Human Hair|Remy|Straight|Wavy|Body Wave|Seamless|Synthetic",
        extras="for Women|Natural Hairline|Full Head",
        attrs="human hair|natural looking|easy apply|synthetic hair|heat resistant|long lasting|thick hair|"
        "high quality|straight hair|soft natural",
        opts="color:hair_color:0.9|size:hair_length:0.7",
        price="15 180",
        uses="instant length and volume|a natural look",
    ),
    dict(
        cat="beauty",
        query="eye cream",
        path=f"{_BEAUTY} › Skin Care › Eyes › Creams",
        nouns="Eye Cream|Under Eye Cream|Eye Gel|Eye Serum",
        goal="an|eye cream|a jar of|eye cream|some|under eye cream",
        words="Anti Aging|Caffeine|Retinol|Peptide|Cooling|Brightening|Firming",
        extras="for Dark Circles and Puffiness|for Wrinkles|for Women and Men",
        attrs="dark circles|fine lines|puffy eyes|anti aging|sensitive skin|fragrance free|paraben free|"
        "cruelty free|hyaluronic acid|natural ingredients|dermatologist tested",
        opts="size:cream_size:0.6|style:beauty_pack:0.2",
        price="9 55",
        uses="brighter looking eyes|morning and night care",
    ),
    dict(
        cat="beauty",
        query="teeth whitening",
        path=f"{_BEAUTY} › Oral Care › Teeth Whitening",
        nouns="Teeth Whitening Strips|Teeth Whitening Kit|Whitening Toothpaste|Teeth Whitening Pen",
        goal="a|teeth whitening kit|some|teeth whitening strips|a|whitening toothpaste",
        words="Professional|Enamel Safe|Peroxide Free|LED|Sensitivity Free|Fast Acting|Mint",
        extras="for Sensitive Teeth|for Coffee Stains|14 Treatments",
        attrs="teeth whitening|sensitive teeth|fluoride free|enamel safe|peroxide free|bad breath|easy use|"
        "natural ingredients|fresh breath|long lasting",
        opts="size:count_size:0.5|style:beauty_pack:0.4",
        price="8 60",
        uses="a brighter smile|whitening at home",
    ),
    dict(
        cat="beauty",
        query="false eyelashes",
        path=f"{_BEAUTY} › Makeup › Eyes › False Eyelashes & Adhesives › False Eyelashes",
        nouns="False Eyelashes|Lash Extensions|Magnetic Eyelashes|Lash Clusters",
        goal="some|false eyelashes|a pack of|false eyelashes|a set of|lash clusters",
        words="Natural Look|Fluffy|Wispy|Faux Mink|Reusable|Handmade|Lightweight",
        extras="with Applicator|Pack of 10 Pairs|for Beginners",
        attrs="natural looking|easy apply|reusable|cruelty free|lightweight|long lasting|vegan|soft natural|"
        "easy remove|handmade",
        opts="style:lash_style:0.8|size:count_size:0.4",
        price="5 30",
        uses="special occasions|a wide-eyed look",
    ),
    dict(
        cat="beauty",
        query="electric toothbrush",
        path=f"{_BEAUTY} › Oral Care › Toothbrushes & Accessories › Power Toothbrushes",
        nouns="Electric Toothbrush|Sonic Toothbrush|Rechargeable Toothbrush",
        goal="an|electric toothbrush|a|sonic toothbrush|a|rechargeable toothbrush",
        words="Sonic|Rechargeable|Smart|Whitening|Travel|Kids",
        extras="with 8 Brush Heads|with Travel Case|for Adults",
        attrs="long battery life|rechargeable|travel case|teeth whitening|sensitive teeth|smart timer|"
        "waterproof|easy use|fast charging|soft bristles",
        opts="color:toothbrush_color:0.8|style:beauty_pack:0.2",
        price="15 90",
        uses="a dentist-clean feel|morning and night brushing",
    ),
    # ---------------------------------------------------------------- food
    dict(
        cat="food",
        query="coffee",
        path=f"{_FOOD} › Beverages › Coffee, Tea & Cocoa › Coffee › Ground Coffee",
        nouns="Ground Coffee|Whole Bean Coffee|Coffee Pods|Coffee|K-Cup Pods",
        goal="some|coffee|a bag of|ground coffee|some|coffee pods",
        words="Medium Roast|Dark Roast|Single Origin|Arabica|Cold Brew|Smooth|Bold|Premium",
        extras="100% Arabica|Fair Trade|for Keurig Brewers",
        attrs="usda organic|fair trade|non gmo|kosher|low acid|decaffeinated|single origin|freshly roasted|"
        "gluten free|resealable bag|natural ingredients",
        opts="flavor name:coffee_flavor:0.8|size:coffee_size:0.7",
        price="7 40",
        uses="a great morning cup|cold brew at home",
    ),
    dict(
        cat="food",
        query="tea",
        path=f"{_FOOD} › Beverages › Coffee, Tea & Cocoa › Tea › Tea Samplers",
        nouns="Tea Bags|Loose Leaf Tea|Herbal Tea|Green Tea|Tea Sampler",
        goal="some|tea|a box of|tea bags|some|herbal tea",
        words="Herbal|Organic|Caffeine Free|Premium|Calming|Detox|Sleep",
        extras="Individually Wrapped|Variety Pack|Sampler Gift Set",
        attrs="caffeine free|usda organic|non gmo|individually wrapped|gluten free|kosher|natural ingredients|"
        "sugar free|vegan|no artificial flavors",
        opts="flavor name:tea_flavor:0.8|size:tea_size:0.6",
        price="5 30",
        uses="a relaxing evening|an afternoon pick-me-up",
    ),
    dict(
        cat="food",
        query="snack bars",
        path=f"{_FOOD} › Snack Foods › Bars › Nutrition Bars",
        nouns="Protein Bars|Granola Bars|Snack Bars|Energy Bars|Nut Bars",
        goal="some|snack bars|a box of|protein bars|some|granola bars",
        words="Chewy|Crunchy|High Protein|Low Sugar|Keto|Whole Grain|Plant Based",
        extras="Individually Wrapped|Variety Pack|On the Go Snack",
        attrs="gluten free|high protein|low sugar|keto friendly|non gmo|individually wrapped|dairy free|"
        "plant based|kosher|low carb|soy free|no artificial flavors",
        opts="flavor name:bar_flavor:0.9|size:snack_pack:0.7",
        price="8 40",
        uses="a snack on the go|post-workout fuel",
    ),
    dict(
        cat="food",
        query="olive oil",
        path=f"{_FOOD} › Pantry Staples › Cooking & Baking › Oils, Vinegars & Salad Dressings › Oils › Olive",
        nouns="Extra Virgin Olive Oil|Olive Oil|Cold Pressed Olive Oil|Olive Oil Spray",
        goal="some|olive oil|a bottle of|olive oil|some|extra virgin olive oil",
        words="Extra Virgin|Cold Pressed|Italian|Greek|Spanish|Light Tasting|First Cold Pressed",
        extras="Glass Bottle|Imported|for Cooking",
        attrs="cold pressed|usda organic|non gmo|kosher|gluten free|single origin|extra virgin|"
        "glass bottle|natural ingredients|vegan",
        opts="size:oil_size:0.8",
        price="8 45",
        uses="salad dressings and cooking|everyday cooking",
    ),
    dict(
        cat="food",
        query="chocolate",
        path=f"{_FOOD} › Snack Foods › Candy & Chocolate › Chocolate › Chocolate Bars",
        nouns="Chocolate Bars|Chocolate|Chocolate Truffles|Chocolate Gift Box",
        goal="some|chocolate|a box of|chocolate truffles|some|chocolate bars",
        words="Dark|Milk|Belgian|Swiss|Premium|Gourmet|Artisan",
        extras="Gift Box|Individually Wrapped|Assorted",
        attrs="gluten free|non gmo|fair trade|kosher|individually wrapped|sugar free|dairy free|vegan|"
        "gift box|usda organic|no artificial flavors",
        opts="flavor name:chocolate_flavor:0.8|size:pack_count:0.6",
        price="5 45",
        uses="gifting|an everyday treat",
    ),
    dict(
        cat="food",
        query="potato chips",
        path=f"{_FOOD} › Snack Foods › Chips & Crisps › Potato Chips",
        nouns="Potato Chips|Kettle Chips|Tortilla Chips|Veggie Chips",
        goal="some|potato chips|a bag of|chips|some|kettle chips",
        words="Kettle Cooked|Crunchy|Baked|Thick Cut|Ridged|Sea Salted",
        extras="Variety Pack|Snack Size Bags|Family Size",
        attrs="gluten free|non gmo|individually wrapped|kosher|vegan|no artificial flavors|low sodium|"
        "baked not fried|plant based|resealable bag",
        opts="flavor name:chips_flavor:0.9|size:snack_pack:0.6",
        price="4 30",
        uses="lunch boxes|game day snacking",
    ),
    dict(
        cat="food",
        query="nuts",
        path=f"{_FOOD} › Snack Foods › Nuts & Seeds › Mixed Nuts",
        nouns="Mixed Nuts|Almonds|Cashews|Pistachios|Trail Mix|Macadamia Nuts",
        goal="some|nuts|a bag of|almonds|some|mixed nuts",
        words="Roasted|Raw|Whole|Deluxe|Premium|Jumbo",
        extras="Resealable Bag|Snack Packs|Bulk",
        attrs="gluten free|non gmo|kosher|keto friendly|high protein|resealable bag|vegan|low carb|"
        "usda organic|plant based|no artificial flavors",
        opts="flavor name:nut_flavor:0.8|size:weight_size:0.7",
        price="6 40",
        uses="healthy snacking|baking and trail mix",
    ),
    dict(
        cat="food",
        query="beef jerky",
        path=f"{_FOOD} › Meat & Seafood › Jerky & Dried Meats › Beef Jerky",
        nouns="Beef Jerky|Turkey Jerky|Meat Sticks|Jerky",
        goal="some|beef jerky|a bag of|jerky|some|meat sticks",
        words="Original|Tender|Thick Cut|Smoked|Grass Fed|Premium",
        extras="Resealable Bag|Snack Packs|High Protein Snack",
        attrs="high protein|grass fed|gluten free|low fat|keto friendly|no preservatives|resealable bag|"
        "low carb|sugar free|individually wrapped",
        opts="flavor name:jerky_flavor:0.9|size:weight_size:0.6",
        price="6 40",
        uses="hiking and road trips|a protein snack",
    ),
    dict(
        cat="food",
        query="protein powder",
        path=f"{_FOOD} › Beverages › Powdered Drink Mixes & Flavorings › Protein Powders",
        nouns="Protein Powder|Whey Protein Powder|Plant Protein Powder|Protein Shake Mix",
        goal="some|protein powder|a tub of|protein powder|a bag of|whey protein",
        words="Whey|Plant Based|Grass Fed|Isolate|Vegan|Collagen",
        extras="for Muscle Recovery|Meal Replacement|20g Protein",
        attrs="high protein|gluten free|non gmo|sugar free|low carb|keto friendly|dairy free|plant based|"
        "grass fed|no artificial flavors|soy free",
        opts="flavor name:protein_flavor:0.9|size:protein_size:0.7",
        price="15 75",
        uses="post-workout shakes|smoothies",
    ),
    dict(
        cat="food",
        query="sparkling water",
        path=f"{_FOOD} › Beverages › Bottled Beverages, Water & Drink Mixes › Water › Sparkling Water",
        nouns="Sparkling Water|Flavored Sparkling Water|Seltzer Water|Mineral Water",
        goal="some|sparkling water|a case of|sparkling water|some|seltzer",
        words="Naturally Flavored|Zero Calorie|Lightly Sweetened|Italian|Crisp",
        extras="12 Fl Oz Cans|Variety Pack",
        attrs="zero sugar|sugar free|zero calorie|non gmo|kosher|natural ingredients|caffeine free|"
        "gluten free|vegan|no artificial flavors",
        opts="flavor name:water_flavor:0.9|size:can_pack:0.6",
        price="6 30",
        uses="a refreshing drink|mixing mocktails",
    ),
    dict(
        cat="food",
        query="hot sauce",
        path=f"{_FOOD} › Pantry Staples › Condiments & Salad Dressings › Sauces › Hot Sauce",
        nouns="Hot Sauce|Chili Sauce|Sriracha Sauce|Pepper Sauce|Salsa",
        goal="some|hot sauce|a bottle of|hot sauce|some|salsa",
        words="Habanero|Chipotle|Ghost Pepper|Garlic|Smoky|Fermented|Louisiana",
        extras="Gift Set|Variety Pack|Small Batch",
        attrs="gluten free|non gmo|vegan|kosher|sugar free|keto friendly|no preservatives|low sodium|"
        "small batch|natural ingredients",
        opts="flavor name:sauce_heat:0.8|size:pack_count:0.5",
        price="4 30",
        uses="tacos and wings|adding heat to any dish",
    ),
    dict(
        cat="food",
        query="peanut butter",
        path=f"{_FOOD} › Pantry Staples › Jams, Jellies & Sweet Spreads › Nut & Seed Butters › Peanut Butter",
        nouns="Peanut Butter|Almond Butter|Nut Butter|Cashew Butter",
        goal="some|peanut butter|a jar of|peanut butter|some|almond butter",
        words="Natural|Creamy|Crunchy|Powdered|Roasted|Organic",
        extras="No Stir|Squeeze Packs|Family Size",
        attrs="non gmo|gluten free|no sugar added|high protein|keto friendly|vegan|usda organic|"
        "kosher|plant based|no palm oil",
        opts="style:spread_style:0.8|size:weight_size:0.6",
        price="4 28",
        uses="sandwiches and smoothies|snacking with fruit",
    ),
    dict(
        cat="food",
        query="breakfast cereal",
        path=f"{_FOOD} › Breakfast Foods › Cereals › Cold Cereals",
        nouns="Cereal|Granola|Breakfast Cereal|Oatmeal|Muesli",
        goal="some|cereal|a box of|cereal|some|granola",
        words="Whole Grain|Crunchy|Ancient Grain|High Fiber|Honey|Protein",
        extras="Family Size|Pack of 4|Resealable Bag",
        attrs="whole grain|gluten free|non gmo|high fiber|low sugar|high protein|usda organic|kosher|vegan|"
        "no artificial flavors|heart healthy",
        opts="flavor name:cereal_flavor:0.8|size:weight_size:0.6",
        price="4 30",
        uses="a quick breakfast|snacking straight from the box",
    ),
    dict(
        cat="food",
        query="cookies",
        path=f"{_FOOD} › Snack Foods › Cookies",
        nouns="Cookies|Soft Baked Cookies|Shortbread Cookies|Sandwich Cookies|Biscuits",
        goal="some|cookies|a box of|cookies|a tin of|shortbread cookies",
        words="Soft Baked|Crispy|Butter|Gourmet|Mini|Homestyle",
        extras="Individually Wrapped|Gift Tin|Snack Packs",
        attrs="individually wrapped|gluten free|non gmo|kosher|vegan|dairy free|nut free|no artificial flavors|"
        "gift box|low sugar",
        opts="flavor name:cookie_flavor:0.8|size:snack_pack:0.6",
        price="4 35",
        uses="lunch boxes|coffee breaks",
    ),
    dict(
        cat="food",
        query="gummy candy",
        path=f"{_FOOD} › Snack Foods › Candy & Chocolate › Gummy Candy",
        nouns="Gummy Candy|Gummy Bears|Sour Gummies|Fruit Snacks|Gummy Worms",
        goal="some|gummy candy|a bag of|gummy bears|some|fruit snacks",
        words="Sour|Fruity|Soft|Chewy|Vegan|Mini",
        extras="Bulk Bag|Party Pack|Individually Wrapped",
        attrs="gluten free|fat free|individually wrapped|vegan|non gmo|kosher|sugar free|no artificial colors|"
        "real fruit juice|resealable bag",
        opts="flavor name:candy_flavor:0.8|size:weight_size:0.6",
        price="3 28",
        uses="movie night|party favors",
    ),
    dict(
        cat="food",
        query="seasoning",
        path=f"{_FOOD} › Pantry Staples › Herbs, Spices & Seasonings › Mixed Spices & Seasonings",
        nouns="Seasoning|Spice Blend|Seasoning Blend|Dry Rub|Spice Set",
        goal="some|seasoning|a jar of|seasoning|a|spice blend",
        words="All Purpose|Smoky|Cajun|Italian|Taco|Steak|Everything Bagel",
        extras="Gift Set|for Grilling|Salt Free",
        attrs="gluten free|non gmo|kosher|salt free|keto friendly|no msg|vegan|natural ingredients|"
        "low sodium|usda organic",
        opts="flavor name:spice_kind:0.7|size:weight_size:0.5",
        price="4 30",
        uses="grilling and roasting|weeknight dinners",
    ),
    dict(
        cat="food",
        query="pasta",
        path=f"{_FOOD} › Pantry Staples › Dried Beans, Grains & Rice › Pasta & Noodles › Pasta",
        nouns="Pasta|Spaghetti|Penne Pasta|Noodles|Protein Pasta",
        goal="some|pasta|a box of|pasta|a pack of|noodles",
        words="Italian|Bronze Cut|Chickpea|Whole Wheat|Lentil|Durum Wheat",
        extras="Pack of 6|Family Size|Imported from Italy",
        attrs="gluten free|non gmo|high protein|whole grain|vegan|kosher|usda organic|high fiber|plant based|low carb",
        opts="style:pasta_shape:0.8|size:pack_count:0.6",
        price="3 30",
        uses="family dinners|quick weeknight meals",
    ),
    dict(
        cat="food",
        query="rice",
        path=f"{_FOOD} › Pantry Staples › Dried Beans, Grains & Rice › Rice",
        nouns="Rice|Long Grain Rice|Microwavable Rice|Rice Cups",
        goal="some|rice|a bag of|rice|some|microwavable rice",
        words="Jasmine|Basmati|Long Grain|Aged|Instant|Ready to Heat",
        extras="Family Size|Pack of 6|Bulk Bag",
        attrs="gluten free|non gmo|kosher|vegan|usda organic|ready to eat|whole grain|low fat|"
        "microwave safe|no preservatives",
        opts="style:rice_style:0.8|size:weight_size:0.6",
        price="3 35",
        uses="stir fries and curries|quick lunches",
    ),
    dict(
        cat="food",
        query="honey",
        path=f"{_FOOD} › Pantry Staples › Jams, Jellies & Sweet Spreads › Honey",
        nouns="Honey|Raw Honey|Honey Bear|Honeycomb",
        goal="some|honey|a jar of|honey|a bottle of|raw honey",
        words="Raw|Unfiltered|Pure|Wildflower|Local|Creamed",
        extras="Glass Jar|Squeeze Bottle|Gift Set",
        attrs="usda organic|non gmo|gluten free|kosher|unfiltered|natural ingredients|glass jar|"
        "no sugar added|raw unpasteurized",
        opts="style:honey_style:0.7|size:weight_size:0.6",
        price="6 45",
        uses="tea and baking|a natural sweetener",
    ),
    dict(
        cat="food",
        query="baking flour",
        path=f"{_FOOD} › Pantry Staples › Cooking & Baking › Flours & Meals",
        nouns="Flour|Baking Flour|Almond Flour|Pancake Mix|Baking Mix",
        goal="some|flour|a bag of|flour|some|pancake mix",
        words="Unbleached|Stone Ground|Blanched|Fine|Superfine|Whole Grain",
        extras="Bulk Bag|for Baking|Pack of 2",
        attrs="gluten free|non gmo|usda organic|keto friendly|kosher|vegan|whole grain|low carb|high fiber|grain free",
        opts="style:flour_style:0.7|size:weight_size:0.6",
        price="4 30",
        uses="bread and cookies|weekend pancakes",
    ),
    dict(
        cat="food",
        query="baby food",
        path=f"{_FOOD} › Baby Foods › Purees & Pouches",
        nouns="Baby Food Pouches|Baby Food|Baby Puffs|Toddler Snacks",
        goal="some|baby food|a box of|baby food pouches|some|baby snacks",
        words="Stage 2|Fruit and Veggie|Puree|Melt-in-Mouth|Teething|Whole Grain",
        extras="Variety Pack|Pack of 12|for Babies 6 Months and Up",
        attrs="usda organic|non gmo|gluten free|no sugar added|bpa free|kosher|dairy free|vegan|"
        "no preservatives|easy open",
        opts="flavor name:baby_flavor:0.8|size:snack_pack:0.6",
        price="6 40",
        uses="little ones on the go|first foods",
    ),
    dict(
        cat="food",
        query="maple syrup",
        path=f"{_FOOD} › Breakfast Foods › Breakfast Syrups & Toppings › Maple Syrup",
        nouns="Maple Syrup|Pure Maple Syrup|Pancake Syrup",
        goal="some|maple syrup|a bottle of|maple syrup|a jug of|pure maple syrup",
        words="Pure|Vermont|Canadian|Amber|Dark Robust|Bourbon Barrel",
        extras="Glass Bottle|Jug|Gift Set",
        attrs="usda organic|non gmo|gluten free|kosher|no sugar added|natural ingredients|glass bottle|vegan",
        opts="style:syrup_style:0.7|size:oil_size:0.6",
        price="7 45",
        uses="pancakes and waffles|baking",
    ),
    # ---------------------------------------------------------------- fashion
    dict(
        cat="fashion",
        query="women's dresses",
        path=f"{_FASHION} › Women › Clothing › Dresses › Casual",
        nouns="Dress|Maxi Dress|Midi Dress|Wrap Dress|Sundress|Shirt Dress",
        goal="a|dress|a|women's dress|a|summer dress",
        leads="Women's",
        words="Casual|Summer|Floral|Boho|V Neck|Short Sleeve|Long Sleeve|Bodycon|A-Line|Smocked|Ruffle|Flowy",
        extras="with Pockets|Beach Party Dress|for Wedding Guest|Tiered Hem",
        attrs="machine wash|polyester spandex|short sleeve|long sleeve|high waist|loose fit|soft material|"
        "daily wear|button closure|pull on closure|hand wash|elastic waist|v neck",
        opts="size:apparel_size:0.95|color:dress_color:0.9",
        price="14 70",
        uses="summer days and parties|work and weekends",
    ),
    dict(
        cat="fashion",
        query="women's tops",
        path=f"{_FASHION} › Women › Clothing › Tops, Tees & Blouses › Blouses & Button-Down Shirts",
        nouns="Blouse|Tunic Top|T-Shirt|Tank Top|Shirt|Henley Top",
        goal="a|blouse|a|women's top|a|tunic top",
        leads="Women's",
        words="Casual|Loose|Crew Neck|V Neck|Short Sleeve|Long Sleeve|Chiffon|Summer|Basic|Ribbed",
        extras="Tunic Tops to Wear with Leggings|for Work|Dressy Casual",
        attrs="machine wash|short sleeve|long sleeve|loose fit|polyester spandex|soft material|daily wear|"
        "button closure|relaxed fit|hand wash|cotton blend|regular fit",
        opts="size:apparel_size:0.95|color:apparel_color:0.9",
        price="10 45",
        uses="office days|casual weekends",
    ),
    dict(
        cat="fashion",
        query="women's jeans",
        path=f"{_FASHION} › Women › Clothing › Jeans",
        nouns="Jeans|Skinny Jeans|Straight Leg Jeans|Bootcut Jeans|Wide Leg Jeans|Mom Jeans",
        goal="a pair of|jeans|some|women's jeans|a pair of|skinny jeans",
        leads="Women's",
        words="High Waisted|Mid Rise|Stretch|Ripped|Classic|Curvy|Distressed|Butt Lifting",
        extras="with Pockets|Ankle Length|Denim Pants",
        attrs="machine wash|high waist|stretch fabric|button closure|zipper closure|slim fit|cotton spandex|"
        "tummy control|regular fit|relaxed fit|daily wear",
        opts="size:women_numeric_size:0.95|color:denim_color:0.8",
        price="18 70",
        uses="everyday wear|a night out",
    ),
    dict(
        cat="fashion",
        query="women's leggings",
        path=f"{_FASHION} › Women › Clothing › Active › Active Leggings",
        nouns="Leggings|Yoga Pants|Workout Leggings|Capri Leggings|Biker Shorts",
        goal="a pair of|leggings|some|yoga pants|a pair of|workout leggings",
        leads="Women's",
        words="High Waisted|Buttery Soft|Squat Proof|Seamless|Athletic|Fleece Lined|Ribbed",
        extras="with Pockets|for Yoga Running|Tummy Control Workout Pants",
        attrs="tummy control|high waist|machine wash|polyester spandex|moisture wicking|quick drying|"
        "squat proof|elastic closure|four way stretch|butt lifting|breathable fabric",
        opts="size:apparel_size:0.95|color:apparel_color:0.9|style:beauty_pack:0.2",
        price="10 45",
        uses="yoga and running|lounging at home",
    ),
    dict(
        cat="fashion",
        query="women's sweaters",
        path=f"{_FASHION} › Women › Clothing › Sweaters › Pullovers",
        nouns="Sweater|Cardigan|Pullover Sweater|Turtleneck Sweater|Knit Sweater",
        goal="a|sweater|a|cardigan|a|women's sweater",
        leads="Women's",
        words="Oversized|Chunky Knit|Cable Knit|Crew Neck|Long Sleeve|Casual|Open Front|Cropped",
        extras="Fall Winter Tops|with Pockets|Loose Fit Pullover",
        attrs="machine wash|long sleeve|loose fit|soft material|hand wash|button closure|acrylic blend|"
        "relaxed fit|daily wear|warm and cozy",
        opts="size:apparel_size:0.95|color:apparel_color:0.9",
        price="18 65",
        uses="chilly fall days|layering in winter",
    ),
    dict(
        cat="fashion",
        query="women's jackets",
        path=f"{_FASHION} › Women › Clothing › Coats, Jackets & Vests › Down Jackets & Parkas",
        nouns="Jacket|Puffer Jacket|Rain Jacket|Denim Jacket|Fleece Jacket|Trench Coat",
        goal="a|jacket|a|women's jacket|a|winter coat",
        leads="Women's",
        words="Lightweight|Waterproof|Packable|Quilted|Hooded|Windproof|Sherpa Lined|Cropped",
        extras="with Hood|Winter Coat|Outdoor Outerwear",
        attrs="water resistant|zipper closure|machine wash|hooded|windproof|lightweight|long sleeve|"
        "warm and cozy|button closure|packable|quick drying",
        opts="size:apparel_size:0.95|color:apparel_color:0.9",
        price="25 120",
        uses="cold weather|hiking and travel",
    ),
    dict(
        cat="fashion",
        query="women's running shoes",
        path=f"{_FASHION} › Women › Shoes › Athletic › Running › Road Running",
        nouns="Running Shoes|Sneakers|Walking Shoes|Tennis Shoes|Trail Running Shoes",
        goal="a pair of|running shoes|some|women's sneakers|a pair of|walking shoes",
        leads="Women's",
        words="Lightweight|Breathable|Slip On|Mesh|Cushioned|Non Slip|Athletic",
        extras="for Gym Jogging|Fashion Sneakers|Memory Foam Sneakers",
        attrs="rubber sole|non slip|arch support|memory foam|lace up|breathable mesh|lightweight|"
        "slip resistant|cushioned insole|machine wash|shock absorbing",
        opts="size:women_shoe_size:0.95|color:shoe_color:0.9",
        price="25 120",
        uses="running and gym workouts|all day walking",
    ),
    dict(
        cat="fashion",
        query="women's sandals",
        path=f"{_FASHION} › Women › Shoes › Sandals › Flat",
        nouns="Sandals|Flat Sandals|Slide Sandals|Wedge Sandals|Flip Flops",
        goal="a pair of|sandals|some|women's sandals|a pair of|flip flops",
        leads="Women's",
        words="Summer|Platform|Strappy|Comfort|Boho|Orthopedic|Casual",
        extras="with Arch Support|for Beach|Open Toe Shoes",
        attrs="open toe|arch support|rubber sole|non slip|ankle strap|memory foam|lightweight|"
        "adjustable strap|waterproof|cushioned insole",
        opts="size:women_shoe_size:0.95|color:leather_color:0.8",
        price="15 70",
        uses="beach days|summer outings",
    ),
    dict(
        cat="fashion",
        query="women's boots",
        path=f"{_FASHION} › Women › Shoes › Boots › Ankle & Bootie",
        nouns="Ankle Boots|Booties|Knee High Boots|Chelsea Boots|Snow Boots",
        goal="a pair of|boots|some|ankle boots|a pair of|women's boots",
        leads="Women's",
        words="Chunky Heel|Block Heel|Faux Leather|Suede|Waterproof|Lug Sole|Winter",
        extras="with Side Zipper|Slip On|Fur Lined",
        attrs="zipper closure|rubber sole|faux leather|non slip|block heel|warm lining|waterproof|"
        "pull on closure|lightweight|memory foam",
        opts="size:women_shoe_size:0.95|color:leather_color:0.85",
        price="30 130",
        uses="fall and winter|dressing up jeans",
    ),
    dict(
        cat="fashion",
        query="women's swimsuits",
        path=f"{_FASHION} › Women › Clothing › Swimsuits & Cover Ups › One-Pieces",
        nouns="One Piece Swimsuit|Bikini Set|Tankini|Swimsuit|Swim Dress",
        goal="a|swimsuit|a|bikini set|a|one piece swimsuit",
        leads="Women's",
        words="High Waisted|Tummy Control|Ruched|Halter|V Neck|Cutout|Push Up",
        extras="Bathing Suit|Beachwear|Two Piece Swimwear",
        attrs="tummy control|quick drying|hand wash|polyester spandex|removable padding|high waist|"
        "adjustable strap|chlorine resistant|upf 50",
        opts="size:apparel_size:0.95|color:dress_color:0.9",
        price="18 60",
        uses="pool and beach days|vacation",
    ),
    dict(
        cat="fashion",
        query="women's bras",
        path=f"{_FASHION} › Women › Clothing › Lingerie, Sleep & Lounge › Lingerie › Bras › Everyday Bras",
        nouns="Bra|Wireless Bra|Sports Bra|T-Shirt Bra|Bralette",
        goal="a|bra|a|wireless bra|a|sports bra",
        leads="Women's",
        words="Seamless|Full Coverage|Push Up|Comfort|Lace|Padded|Minimizer",
        extras="with Support|Everyday Bra|for Women",
        attrs="hook and eye closure|machine wash|wire free|removable padding|hand wash|full coverage|"
        "adjustable strap|moisture wicking|soft material|breathable fabric",
        opts="size:bra_size:0.9|color:apparel_color:0.85",
        price="12 55",
        uses="everyday comfort|workouts",
    ),
    dict(
        cat="fashion",
        query="men's t-shirts",
        path=f"{_FASHION} › Men › Clothing › Shirts › T-Shirts",
        nouns="T-Shirt|Tee|Graphic Tee|Crew Neck T-Shirt|V-Neck T-Shirt|Performance Shirt",
        goal="a|t-shirt|a|men's t-shirt|a|tee",
        leads="Men's",
        words="Short Sleeve|Cotton|Classic Fit|Slim Fit|Athletic|Crew Neck|Heavyweight|Pocket",
        extras="Pack of 3|Casual Summer Shirts|Workout Tops",
        attrs="machine wash|short sleeve|cotton blend|classic fit|regular fit|slim fit|moisture wicking|"
        "quick drying|soft material|pull on closure|breathable fabric|tag free",
        opts="size:apparel_size:0.95|color:apparel_color:0.9",
        price="8 40",
        uses="everyday wear|the gym",
    ),
    dict(
        cat="fashion",
        query="men's dress shirts",
        path=f"{_FASHION} › Men › Clothing › Shirts › Dress Shirts",
        nouns="Dress Shirt|Button Down Shirt|Oxford Shirt|Formal Shirt",
        goal="a|dress shirt|a|men's dress shirt|a|button down shirt",
        leads="Men's",
        words="Slim Fit|Regular Fit|Long Sleeve|Wrinkle Free|Stretch|Solid|Plaid",
        extras="for Business Wedding|Button Down Shirts|Easy Care",
        attrs="button closure|long sleeve|machine wash|slim fit|regular fit|wrinkle free|cotton blend|"
        "stretch fabric|easy care|classic fit",
        opts="size:apparel_size:0.95|color:apparel_color:0.9",
        price="15 60",
        uses="the office|weddings and events",
    ),
    dict(
        cat="fashion",
        query="men's jeans",
        path=f"{_FASHION} › Men › Clothing › Jeans",
        nouns="Jeans|Slim Fit Jeans|Straight Leg Jeans|Relaxed Fit Jeans|Carpenter Jeans",
        goal="a pair of|jeans|some|men's jeans|a pair of|slim fit jeans",
        leads="Men's",
        words="Stretch|Classic|Athletic Fit|Distressed|Ripped|Original Fit|Flex",
        extras="Denim Pants|with Pockets|Five Pocket",
        attrs="machine wash|button closure|zipper closure|stretch fabric|slim fit|regular fit|relaxed fit|"
        "cotton blend|classic fit|straight leg",
        opts="size:men_jeans_size:0.95|color:denim_color:0.8",
        price="20 80",
        uses="everyday wear|work and weekends",
    ),
    dict(
        cat="fashion",
        query="men's shorts",
        path=f"{_FASHION} › Men › Clothing › Shorts",
        nouns="Shorts|Cargo Shorts|Athletic Shorts|Chino Shorts|Swim Trunks",
        goal="a pair of|shorts|some|men's shorts|a pair of|cargo shorts",
        leads="Men's",
        words="Casual|Quick Dry|Lightweight|7 Inch|Stretch|Drawstring|Classic Fit",
        extras="with Pockets|for Gym Running|Summer Shorts",
        attrs="elastic waist|drawstring closure|machine wash|quick drying|moisture wicking|lightweight|"
        "relaxed fit|regular fit|zipper pockets|stretch fabric",
        opts="size:apparel_size:0.95|color:apparel_color:0.9",
        price="12 45",
        uses="summer days|workouts",
    ),
    dict(
        cat="fashion",
        query="men's hoodies",
        path=f"{_FASHION} › Men › Clothing › Fashion Hoodies & Sweatshirts",
        nouns="Hoodie|Pullover Hoodie|Zip Up Hoodie|Sweatshirt|Fleece Hoodie",
        goal="a|hoodie|a|men's hoodie|a|sweatshirt",
        leads="Men's",
        words="Fleece|Heavyweight|Athletic|Casual|Full Zip|Lightweight|Thermal Lined",
        extras="with Kangaroo Pocket|Hooded Sweatshirt|Winter Tops",
        attrs="machine wash|long sleeve|drawstring closure|zipper closure|fleece lined|soft material|"
        "regular fit|relaxed fit|warm and cozy|cotton blend",
        opts="size:apparel_size:0.95|color:apparel_color:0.9",
        price="18 60",
        uses="chilly evenings|lounging and workouts",
    ),
    dict(
        cat="fashion",
        query="men's jackets",
        path=f"{_FASHION} › Men › Clothing › Jackets & Coats",
        nouns="Jacket|Bomber Jacket|Softshell Jacket|Windbreaker|Puffer Jacket|Rain Jacket",
        goal="a|jacket|a|men's jacket|a|winter jacket",
        leads="Men's",
        words="Waterproof|Lightweight|Insulated|Hooded|Windproof|Fleece Lined|Military",
        extras="Winter Coat|with Multi Pockets|Outdoor Hiking Jacket",
        attrs="water resistant|zipper closure|windproof|machine wash|hooded|warm lining|lightweight|"
        "long sleeve|packable|quick drying",
        opts="size:apparel_size:0.95|color:apparel_color:0.9",
        price="25 130",
        uses="cold weather|outdoor adventures",
    ),
    dict(
        cat="fashion",
        query="men's running shoes",
        path=f"{_FASHION} › Men › Shoes › Athletic › Running › Road Running",
        nouns="Running Shoes|Sneakers|Walking Shoes|Trail Running Shoes|Training Shoes",
        goal="a pair of|running shoes|some|men's sneakers|a pair of|men's running shoes",
        leads="Men's",
        words="Lightweight|Breathable|Cushioned|Non Slip|Athletic|Mesh|Wide Toe Box",
        extras="for Gym Jogging|Fashion Sneakers|Tennis Shoes",
        attrs="rubber sole|non slip|arch support|memory foam|lace up|breathable mesh|lightweight|"
        "slip resistant|cushioned insole|shock absorbing|wide toe box",
        opts="size:men_shoe_size:0.95|color:shoe_color:0.9",
        price="25 130",
        uses="running and training|all day walking",
    ),
    dict(
        cat="fashion",
        query="men's dress shoes",
        path=f"{_FASHION} › Men › Shoes › Oxfords",
        nouns="Oxford Shoes|Dress Shoes|Loafers|Derby Shoes|Chukka Boots",
        goal="a pair of|dress shoes|some|oxford shoes|a pair of|loafers",
        leads="Men's",
        words="Leather|Classic|Formal|Wingtip|Cap Toe|Slip On|Casual",
        extras="for Business Wedding|Lace Up Oxfords|Comfortable Loafers",
        attrs="leather sole|rubber sole|lace up|slip on|memory foam|non slip|genuine leather|cushioned insole|"
        "arch support|lightweight",
        opts="size:men_shoe_size:0.95|color:leather_color:0.85",
        price="35 150",
        uses="the office|weddings and formal events",
    ),
    dict(
        cat="fashion",
        query="socks",
        path=f"{_FASHION} › Men › Clothing › Socks › Athletic Socks",
        nouns="Socks|Athletic Socks|Crew Socks|Ankle Socks|No Show Socks|Compression Socks",
        goal="some|socks|a pack of|socks|a few pairs of|crew socks",
        leads="Men's|Women's|Unisex",
        words="Cushioned|Moisture Wicking|Cotton|Performance|Low Cut|Thick|Merino Wool",
        extras="Multipack|for Running Hiking|with Arch Support",
        attrs="moisture wicking|machine wash|cushioned sole|arch support|breathable fabric|cotton blend|"
        "non slip|odor control|quick drying",
        opts="size:sock_size:0.8|style:sock_pack:0.7|color:apparel_color:0.5",
        price="8 35",
        uses="running and sports|everyday comfort",
    ),
    dict(
        cat="fashion",
        query="kids' sneakers",
        path=f"{_FASHION} › Girls › Shoes › Sneakers",
        nouns="Sneakers|Running Shoes|Light Up Shoes|Slip On Shoes|Tennis Shoes",
        goal="a pair of|kids' sneakers|some|kids' shoes|a pair of|light up shoes",
        leads="Kids'|Boys'|Girls'",
        words="Lightweight|Hook and Loop|Breathable|Athletic|Slip Resistant|Cartoon",
        extras="for Toddler Little Kid Big Kid|School Shoes|Play Shoes",
        attrs="rubber sole|hook and loop|non slip|lightweight|breathable mesh|machine wash|easy on|"
        "cushioned insole|slip resistant",
        opts="size:kids_shoe_size:0.95|color:shoe_color:0.85",
        price="15 60",
        uses="school and play|the playground",
    ),
    dict(
        cat="fashion",
        query="handbags",
        path=f"{_FASHION} › Women › Handbags & Wallets › Shoulder Bags",
        nouns="Handbag|Tote Bag|Crossbody Bag|Shoulder Bag|Purse|Hobo Bag",
        goal="a|handbag|a|tote bag|a|crossbody bag",
        leads="Women's",
        words="Leather|Vegan Leather|Large|Small|Woven|Quilted|Classic",
        extras="with Zipper|Top Handle Satchel|Work Tote",
        attrs="faux leather|zipper closure|adjustable strap|large capacity|multiple pockets|lightweight|"
        "water resistant|genuine leather|magnetic closure",
        opts="color:bag_color:0.9",
        price="20 110",
        uses="work and travel|everyday errands",
    ),
    dict(
        cat="fashion",
        query="sunglasses",
        path=f"{_FASHION} › Men › Accessories › Sunglasses & Eyewear Accessories › Sunglasses",
        nouns="Sunglasses|Polarized Sunglasses|Aviator Sunglasses|Sport Sunglasses",
        goal="a pair of|sunglasses|some|sunglasses|a pair of|polarized sunglasses",
        leads="Men's|Women's|Unisex",
        words="Polarized|Retro|Square|Round|Oversized|Vintage|Classic",
        extras="UV400 Protection|for Driving Fishing|Cat Eye Shades",
        attrs="uv protection|polarized lens|lightweight|metal frame|scratch resistant|durable frame|"
        "anti glare|carrying case",
        opts="color:lens_color:0.9",
        price="10 80",
        uses="driving and outdoor sports|sunny days",
    ),
    dict(
        cat="fashion",
        query="baseball caps",
        path=f"{_FASHION} › Men › Accessories › Hats & Caps › Baseball Caps",
        nouns="Baseball Cap|Dad Hat|Trucker Hat|Sun Hat|Bucket Hat",
        goal="a|baseball cap|a|hat|a|sun hat",
        leads="Men's|Women's|Unisex",
        words="Adjustable|Classic|Washed Cotton|Mesh|Vintage|Low Profile|Outdoor",
        extras="for Running Golf|UPF 50+|Structured",
        attrs="adjustable closure|hand wash|cotton blend|upf 50|breathable fabric|quick drying|lightweight|one size",
        opts="color:apparel_color:0.9",
        price="8 35",
        uses="sunny days|sports and travel",
    ),
    dict(
        cat="fashion",
        query="belts",
        path=f"{_FASHION} › Men › Accessories › Belts",
        nouns="Belt|Leather Belt|Ratchet Belt|Dress Belt|Canvas Belt",
        goal="a|belt|a|leather belt|a|men's belt",
        leads="Men's|Women's",
        words="Genuine Leather|Reversible|Classic|Casual|Braided|Adjustable",
        extras="with Automatic Buckle|for Jeans|Gift Box",
        attrs="genuine leather|adjustable fit|durable buckle|gift box|easy adjust|casual wear|dress wear",
        opts="size:apparel_size:0.8|color:leather_color:0.85",
        price="10 50",
        uses="jeans and chinos|business attire",
    ),
    dict(
        cat="fashion",
        query="girls' dresses",
        path=f"{_FASHION} › Girls › Clothing › Dresses",
        nouns="Dress|Party Dress|Tutu Dress|Sundress|Twirl Dress",
        goal="a|girls' dress|a|dress for my daughter|a|party dress",
        leads="Girls'|Toddler Girls'",
        words="Casual|Floral|Princess|Short Sleeve|Sleeveless|Ruffle|Cotton",
        extras="for Party Wedding|Summer Dress|with Pockets",
        attrs="machine wash|cotton blend|short sleeve|soft material|pull on closure|button closure|"
        "daily wear|breathable fabric",
        opts="size:kids_size:0.95|color:dress_color:0.85",
        price="10 45",
        uses="parties and school|summer play",
    ),
    # ---------------------------------------------------------------- furniture
    dict(
        cat="furniture",
        query="office chairs",
        path=f"{_FURNITURE} › Home Office Furniture › Home Office Chairs › Desk Chairs",
        nouns="Office Chair|Desk Chair|Ergonomic Chair|Executive Chair|Task Chair|Mesh Chair",
        goal="an|office chair|a|desk chair|an|ergonomic chair",
        words="Ergonomic|Mesh|High Back|Mid Back|Swivel|Executive|Rolling|Big and Tall",
        extras="with Lumbar Support|with Flip Up Arms|with Headrest|for Home Office",
        attrs="lumbar support|height adjustable|easy assembly|swivel|mesh back|heavy duty|pu leather|"
        "armrest|high density foam|tilt function|home office|breathable mesh",
        opts="color:chair_color:0.85|style:furniture_style:0.3",
        price="60 320",
        uses="long work days|the home office",
    ),
    dict(
        cat="furniture",
        query="gaming chairs",
        path=f"{_FURNITURE} › Game & Recreation Room Furniture › Gaming Chairs › PC & Video Game Chairs",
        nouns="Gaming Chair|Racing Style Chair|Computer Gaming Chair|Video Game Chair",
        goal="a|gaming chair|a|computer gaming chair|a|racing style chair",
        words="Ergonomic|Reclining|Big and Tall|Massage|High Back|Racing",
        extras="with Footrest|with Headrest and Lumbar Support|with Speakers",
        attrs="lumbar support|height adjustable|easy assembly|pu leather|footrest|reclining|swivel|"
        "heavy duty|high density foam|armrest",
        opts="color:chair_color:0.9",
        price="90 350",
        uses="long gaming sessions|work and play",
    ),
    dict(
        cat="furniture",
        query="bookcases",
        path=f"{_FURNITURE} › Home Office Furniture › Bookcases",
        nouns="Bookcase|Bookshelf|Ladder Shelf|Corner Bookshelf|Display Shelf",
        goal="a|bookcase|a|bookshelf|a|ladder shelf",
        words="Industrial|Tall|Wood|Open|Etagere|Cube|Rustic|Modern",
        extras="with Metal Frame|for Living Room|Storage Organizer",
        attrs="easy assembly|storage space|metal frame|engineered wood|living room|space saving|"
        "wall anchor|heavy duty|solid wood|home office|stable structure",
        opts="color:wood_color:0.85|size:shelf_tiers:0.7",
        price="40 260",
        uses="books and decor|the living room",
    ),
    dict(
        cat="furniture",
        query="bed frames",
        path=f"{_FURNITURE} › Bedroom Furniture › Beds, Frames & Bases › Beds",
        nouns="Bed Frame|Platform Bed Frame|Upholstered Bed|Metal Bed Frame|Storage Bed",
        goal="a|bed frame|a|platform bed|a|bed frame",
        words="Platform|Upholstered|Metal|Wood|Tufted|Low Profile|Heavy Duty",
        extras="with Headboard|with Storage Drawers|No Box Spring Needed|with Charging Station",
        attrs="easy assembly|no box spring needed|storage space|noise free|metal frame|solid wood|"
        "heavy duty|under bed storage|wood slat support|bedroom",
        opts="size:bed_size:0.9|color:wood_color:0.7",
        price="80 450",
        uses="a restful bedroom|small apartments",
    ),
    dict(
        cat="furniture",
        query="nightstands",
        path=f"{_FURNITURE} › Bedroom Furniture › Nightstands",
        nouns="Nightstand|Bedside Table|End Table|Night Stand Set",
        goal="a|nightstand|a|bedside table|a|night stand",
        words="Modern|Small|Wooden|Floating|Rattan|Farmhouse",
        extras="with Drawer|with Charging Station|with Storage Shelf|Set of 2",
        attrs="easy assembly|storage space|charging station|engineered wood|solid wood|bedroom|"
        "space saving|open shelf|sturdy construction",
        opts="color:wood_color:0.85|style:furniture_set:0.5",
        price="30 180",
        uses="the bedroom|small spaces",
    ),
    dict(
        cat="furniture",
        query="tv stands",
        path=f"{_FURNITURE} › Living Room Furniture › TV & Media Furniture › Television Stands & Entertainment Centers",
        nouns="TV Stand|Entertainment Center|Media Console|TV Console",
        goal="a|tv stand|an|entertainment center|a|media console",
        words="Modern|Farmhouse|Mid Century|Industrial|Low Profile|Corner",
        extras="for TVs up to 65 Inch|with Storage Cabinets|with LED Lights|with Barn Doors",
        attrs="easy assembly|storage space|cable management|engineered wood|living room|led lights|"
        "open shelf|sturdy construction|solid wood|adjustable shelves",
        opts="color:wood_color:0.85|size:desk_width:0.5",
        price="60 350",
        uses="the living room|media and gaming consoles",
    ),
    dict(
        cat="furniture",
        query="coffee tables",
        path=f"{_FURNITURE} › Living Room Furniture › Tables › Coffee Tables",
        nouns="Coffee Table|Lift Top Coffee Table|Round Coffee Table|Cocktail Table",
        goal="a|coffee table|a|lift top coffee table|a|living room table",
        words="Modern|Rustic|Farmhouse|Mid Century|Glass|Round|Industrial",
        extras="with Storage|with Lift Top|for Living Room",
        attrs="easy assembly|storage space|living room|tempered glass|solid wood|metal frame|"
        "engineered wood|lift top|sturdy construction",
        opts="color:wood_color:0.85",
        price="50 300",
        uses="the living room|entertaining guests",
    ),
    dict(
        cat="furniture",
        query="dining chairs",
        path=f"{_FURNITURE} › Kitchen & Dining Room Furniture › Chairs",
        nouns="Dining Chairs|Kitchen Chairs|Upholstered Dining Chairs|Side Chairs",
        goal="some|dining chairs|a set of|dining chairs|some|kitchen chairs",
        words="Modern|Velvet|Mid Century|Farmhouse|Tufted|Armless|Wishbone",
        extras="Set of 4|Set of 2|with Metal Legs",
        attrs="easy assembly|dining room|solid wood|metal legs|pu leather|velvet fabric|high density foam|"
        "sturdy construction|easy clean",
        opts="color:upholstery_color:0.85|style:furniture_set:0.7",
        price="60 350",
        uses="the dining room|family meals",
    ),
    dict(
        cat="furniture",
        query="bar stools",
        path=f"{_FURNITURE} › Kitchen & Dining Room Furniture › Stools › Barstools",
        nouns="Bar Stools|Counter Height Stools|Swivel Bar Stools|Kitchen Stools",
        goal="some|bar stools|a set of|bar stools|some|counter stools",
        words="Swivel|Adjustable|Upholstered|Backless|Industrial|Farmhouse|Modern",
        extras="Set of 2|with Back|for Kitchen Island",
        attrs="height adjustable|swivel|easy assembly|pu leather|footrest|metal frame|dining room|"
        "sturdy construction|easy clean",
        opts="size:stool_height:0.8|color:upholstery_color:0.8",
        price="50 300",
        uses="the kitchen island|home bars",
    ),
    dict(
        cat="furniture",
        query="sofas",
        path=f"{_FURNITURE} › Living Room Furniture › Sofas & Couches",
        nouns="Sofa|Couch|Loveseat|Sectional Sofa|Sleeper Sofa|Futon",
        goal="a|sofa|a|couch|a|loveseat",
        words="Modern|Mid Century|Velvet|Convertible|Tufted|Small|Modular",
        extras="for Living Room|with USB Ports|with Chaise|for Small Spaces",
        attrs="easy assembly|living room|high density foam|solid wood|velvet fabric|space saving|"
        "removable cushions|sturdy construction|pocket spring|easy clean",
        opts="color:upholstery_color:0.9",
        price="150 900",
        uses="the living room|apartments and small spaces",
    ),
    dict(
        cat="furniture",
        query="accent chairs",
        path=f"{_FURNITURE} › Living Room Furniture › Chairs › Accent Chairs",
        nouns="Accent Chair|Armchair|Barrel Chair|Reading Chair|Swivel Chair",
        goal="an|accent chair|an|armchair|a|reading chair",
        words="Modern|Velvet|Upholstered|Mid Century|Boucle|Tufted|Oversized",
        extras="for Living Room|with Ottoman|with Wood Legs",
        attrs="easy assembly|living room|high density foam|solid wood|velvet fabric|sturdy construction|"
        "bedroom|comfortable seat|wood legs",
        opts="color:upholstery_color:0.9",
        price="90 400",
        uses="reading nooks|the living room",
    ),
    dict(
        cat="furniture",
        query="dressers",
        path=f"{_FURNITURE} › Bedroom Furniture › Dressers",
        nouns="Dresser|Chest of Drawers|Tall Dresser|Storage Dresser",
        goal="a|dresser|a|chest of drawers|a|dresser for the bedroom",
        words="6 Drawer|5 Drawer|Wide|Modern|Farmhouse|Fabric|Wood",
        extras="for Bedroom|with Metal Handles|Storage Tower",
        attrs="easy assembly|storage space|bedroom|engineered wood|solid wood|metal frame|anti tip|"
        "smooth drawers|sturdy construction",
        opts="color:wood_color:0.85",
        price="70 420",
        uses="bedroom storage|closets and nurseries",
    ),
    dict(
        cat="furniture",
        query="shoe racks",
        path=f"{_FURNITURE} › Entryway Furniture › Shoe Racks",
        nouns="Shoe Rack|Shoe Organizer|Shoe Storage Cabinet|Shoe Bench",
        goal="a|shoe rack|a|shoe organizer|a|shoe storage cabinet",
        words="Stackable|Narrow|Bamboo|Metal|Entryway|Free Standing",
        extras="for Closet Entryway|Holds 20 Pairs|with Hooks",
        attrs="easy assembly|space saving|storage space|metal frame|sturdy construction|bamboo|stackable|"
        "entryway|heavy duty",
        opts="size:shelf_tiers:0.8|color:wood_color:0.6",
        price="20 150",
        uses="the entryway|closets",
    ),
    dict(
        cat="furniture",
        query="computer desks",
        path=f"{_FURNITURE} › Home Office Furniture › Home Office Desks › Computer Desks",
        nouns="Computer Desk|Writing Desk|Office Desk|L Shaped Desk|Gaming Desk",
        goal="a|computer desk|a|desk|an|office desk",
        words="Modern|Industrial|Simple|Small|Corner|Home Office|Study",
        extras="with Storage Shelves|with Monitor Stand|with Drawers|for Small Spaces",
        attrs="easy assembly|home office|metal frame|storage space|space saving|engineered wood|"
        "sturdy construction|cable management|heavy duty|waterproof surface",
        opts="size:desk_width:0.8|color:wood_color:0.85",
        price="50 300",
        uses="the home office|studying and gaming",
    ),
    dict(
        cat="furniture",
        query="standing desks",
        path=f"{_FURNITURE} › Home Office Furniture › Home Office Desks › Standing Desks",
        nouns="Standing Desk|Electric Standing Desk|Sit Stand Desk|Height Adjustable Desk",
        goal="a|standing desk|a|sit stand desk|an|electric standing desk",
        words="Electric|Height Adjustable|Dual Motor|Memory Preset|Ergonomic",
        extras="with Splice Board|with Drawer|for Home Office",
        attrs="height adjustable|easy assembly|home office|dual motor|memory preset|steel frame|"
        "heavy duty|sturdy construction|quiet motor",
        opts="size:desk_width:0.85|color:wood_color:0.85",
        price="120 500",
        uses="healthy work habits|the home office",
    ),
    dict(
        cat="furniture",
        query="floating shelves",
        path=f"{_FURNITURE} › Home Décor Products › Wall Shelves",
        nouns="Floating Shelves|Wall Shelves|Wall Mounted Shelves|Corner Shelves",
        goal="some|floating shelves|a set of|wall shelves|some|wall shelves",
        words="Rustic|Wood|Modern|Farmhouse|Metal Bracket|Invisible",
        extras="Set of 3|for Bedroom Bathroom Kitchen|with Towel Bar",
        attrs="wall mounted|easy install|solid wood|space saving|heavy duty|hardware included|"
        "storage space|bathroom|living room",
        opts="color:wood_color:0.85|style:furniture_set:0.5",
        price="15 90",
        uses="bathrooms and kitchens|displaying plants and photos",
    ),
    dict(
        cat="furniture",
        query="recliners",
        path=f"{_FURNITURE} › Living Room Furniture › Chairs › Recliners",
        nouns="Recliner Chair|Power Lift Recliner|Rocker Recliner|Massage Recliner",
        goal="a|recliner|a|recliner chair|a|lift chair",
        words="Oversized|Power|Manual|Swivel|Wall Hugger|Breathable Leather",
        extras="for Living Room|with Massage and Heat|for Elderly",
        attrs="living room|pu leather|high density foam|easy assembly|massage function|heavy duty|"
        "side pocket|usb charging|overstuffed",
        opts="color:upholstery_color:0.9",
        price="150 700",
        uses="relaxing evenings|movie nights",
    ),
    dict(
        cat="furniture",
        query="mattresses",
        path=f"{_FURNITURE} › Bedroom Furniture › Mattresses & Box Springs › Mattresses",
        nouns="Memory Foam Mattress|Hybrid Mattress|Mattress|Innerspring Mattress",
        goal="a|mattress|a|memory foam mattress|a|hybrid mattress",
        words="Gel Memory Foam|Medium Firm|Cooling|Pocket Spring|Plush",
        extras="in a Box|CertiPUR-US Certified|for Back Pain",
        attrs="memory foam|pressure relief|cooling gel|medium firm|pocket spring|motion isolation|"
        "certipur-us certified|fiberglass free|bedroom",
        opts="size:bed_size:0.95|style:mattress_thickness:0.6",
        price="120 800",
        uses="a restful sleep|guest rooms",
    ),
    dict(
        cat="furniture",
        query="storage cabinets",
        path=f"{_FURNITURE} › Kitchen & Dining Room Furniture › Storage Cabinets",
        nouns="Storage Cabinet|Kitchen Pantry Cabinet|Buffet Sideboard|Bathroom Cabinet|Accent Cabinet",
        goal="a|storage cabinet|a|pantry cabinet|a|sideboard",
        words="Tall|Farmhouse|Modern|Rattan|Freestanding|Wooden",
        extras="with Doors and Shelves|for Kitchen Dining Room|with Drawer",
        attrs="easy assembly|storage space|adjustable shelves|engineered wood|anti tip|dining room|"
        "solid wood|sturdy construction|living room|bathroom",
        opts="color:wood_color:0.85|style:cabinet_doors:0.6",
        price="60 350",
        uses="kitchen storage|living room organization",
    ),
    dict(
        cat="furniture",
        query="area rugs",
        path="Home & Kitchen › Home Décor Products › Area Rugs, Runners & Pads › Area Rugs",
        nouns="Area Rug|Washable Rug|Runner Rug|Shag Rug|Outdoor Rug",
        goal="an|area rug|a|rug|a|washable rug",
        words="Vintage|Boho|Modern|Moroccan|Abstract|Shag|Geometric|Distressed",
        extras="for Living Room|Non Slip Backing|Low Pile",
        attrs="machine washable|non slip|living room|low pile|stain resistant|easy clean|bedroom|"
        "pet friendly|soft material",
        opts="size:rug_size:0.9|color:upholstery_color:0.85",
        price="25 300",
        uses="the living room|bedrooms and hallways",
    ),
    dict(
        cat="furniture",
        query="curtains",
        path="Home & Kitchen › Home Décor Products › Window Treatments › Curtains & Drapes › Panels",
        nouns="Blackout Curtains|Curtains|Sheer Curtains|Thermal Curtains",
        goal="some|curtains|a set of|blackout curtains|some|window curtains",
        words="Blackout|Thermal Insulated|Room Darkening|Linen|Sheer|Grommet",
        extras="for Bedroom|2 Panels|for Living Room",
        attrs="blackout|thermal insulated|machine washable|noise reducing|living room|bedroom|"
        "grommet top|energy saving|easy install",
        opts="size:curtain_size:0.9|color:upholstery_color:0.85",
        price="15 80",
        uses="the bedroom|living rooms",
    ),
    # ---------------------------------------------------------------- electronics
    dict(
        cat="electronics",
        query="headphones",
        path=f"{_ELECTRONICS} › Headphones, Earbuds & Accessories › Headphones & Earbuds › Over-Ear Headphones",
        nouns="Wireless Headphones|Bluetooth Headphones|Over Ear Headphones|Headphones",
        goal="a pair of|headphones|some|wireless headphones|a pair of|over ear headphones",
        words="Active Noise Cancelling|Bluetooth|Hi-Fi Stereo|Foldable|Studio|Deep Bass",
        extras="with Microphone|60H Playtime|for Travel Home Office",
        attrs="noise cancelling|bluetooth 5.3|long battery life|built in microphone|foldable design|"
        "hands free|stereo sound|fast charging|memory foam|lightweight|carrying case|wireless",
        opts="color:electronics_color:0.9|style:mic_style:0.3",
        price="20 250",
        uses="travel and commuting|working from home",
    ),
    dict(
        cat="electronics",
        query="wireless earbuds",
        path=f"{_ELECTRONICS} › Headphones, Earbuds & Accessories › Headphones & Earbuds › Earbud Headphones",
        nouns="Wireless Earbuds|Bluetooth Earbuds|True Wireless Earbuds|Sport Earbuds|Earphones",
        goal="a pair of|wireless earbuds|some|earbuds|a pair of|bluetooth earbuds",
        words="Bluetooth 5.3|Noise Cancelling|Waterproof|Sport|Open Ear|Mini",
        extras="with Charging Case|with Ear Hooks|for iPhone and Android",
        attrs="noise cancelling|bluetooth 5.3|long battery life|built in microphone|water resistant|"
        "touch control|fast charging|charging case|stereo sound|hands free|ipx7 waterproof",
        opts="color:electronics_color:0.9",
        price="15 200",
        uses="workouts and running|calls and commuting",
    ),
    dict(
        cat="electronics",
        query="bluetooth speakers",
        path=f"{_ELECTRONICS} › Portable Audio & Video › Portable Speakers & Docks › Portable Bluetooth Speakers",
        nouns="Bluetooth Speaker|Portable Speaker|Wireless Speaker|Party Speaker|Shower Speaker",
        goal="a|bluetooth speaker|a|portable speaker|a|wireless speaker",
        words="Portable|Waterproof|Loud|360 Sound|Rugged|Mini",
        extras="with Deep Bass|for Outdoor Camping|with RGB Lights",
        attrs="water resistant|long battery life|stereo sound|bluetooth 5.3|hands free|built in microphone|"
        "easy carry|high power|deep bass|ipx7 waterproof",
        opts="color:electronics_color:0.9|style:speaker_style:0.3",
        price="18 180",
        uses="the beach and camping|parties",
    ),
    dict(
        cat="electronics",
        query="phone cases",
        path=f"{_ELECTRONICS} › Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases",
        nouns="Phone Case|Case|Protective Case|Wallet Case|Magnetic Case",
        goal="a|phone case|a|case for my phone|a|protective phone case",
        words="Clear|Shockproof|Slim|Magnetic|Rugged|Silicone|Glitter",
        extras="Compatible with MagSafe|with Screen Protector|with Card Holder",
        attrs="shock absorbing|wireless charging|slim fit|scratch resistant|drop protection|easy install|"
        "anti yellowing|raised edges|magnetic|non slip grip",
        opts="size:phone_model:0.9|color:case_color:0.85",
        price="7 45",
        uses="everyday protection|drop protection",
    ),
    dict(
        cat="electronics",
        query="screen protectors",
        path=f"{_PHONE_ACCESSORIES} › Screen Protectors",
        nouns="Screen Protector|Tempered Glass Screen Protector|Privacy Screen Protector",
        goal="a|screen protector|some|screen protectors|a pack of|screen protectors",
        words="Tempered Glass|Privacy|Anti Glare|Full Coverage|9H Hardness|HD Clear",
        extras="with Easy Install Kit|Bubble Free|with Camera Lens Protector",
        attrs="tempered glass|easy install|bubble free|high definition|scratch resistant|case friendly|"
        "anti fingerprint|9h hardness|privacy screen",
        opts="size:phone_model:0.9|style:pack_n:0.7",
        price="6 30",
        uses="keeping screens scratch free|everyday protection",
    ),
    dict(
        cat="electronics",
        query="hdmi cables",
        path=f"{_ELECTRONICS} › Television & Video › Accessories › Cables › HDMI Cables",
        nouns="HDMI Cable|High Speed HDMI Cable|HDMI 2.1 Cable|Braided HDMI Cord",
        goal="an|hdmi cable|a|high speed hdmi cable|an|hdmi cord",
        words="8K|4K|High Speed|Braided|Ultra High Speed|Gold Plated",
        extras="for TV Monitor PS5|48Gbps|with Ethernet",
        attrs="high speed|4k ultra hd|gold plated|braided nylon|plug and play|high definition|"
        "durable connector|ethernet support|hdr support",
        opts="size:cable_length:0.9|style:pack_n:0.5",
        price="6 35",
        uses="home theaters|gaming consoles",
    ),
    dict(
        cat="electronics",
        query="usb c cables",
        path=f"{_PERIPHERALS} › Cables › USB Cables",
        nouns="USB C Cable|USB C to USB C Cable|Charging Cable|USB C Charger Cable",
        goal="a|usb c cable|a|charging cable|some|usb c cables",
        words="Fast Charging|Braided|100W|60W|Right Angle|Durable",
        extras="for iPhone 15 Samsung Galaxy|for MacBook iPad|3 Pack",
        attrs="fast charging|braided nylon|high speed|durable connector|data sync|usb c|plug and play|tangle free",
        opts="size:cable_length:0.85|style:pack_n:0.6|color:electronics_color:0.4",
        price="5 30",
        uses="charging on the go|laptops and phones",
    ),
    dict(
        cat="electronics",
        query="wall chargers",
        path=f"{_PHONE_ACCESSORIES} › Chargers & Power Adapters › Wall Chargers",
        nouns="USB C Charger|Wall Charger|Fast Charger|Charging Block|GaN Charger",
        goal="a|wall charger|a|usb c charger|a|fast charger",
        words="GaN|PD|Foldable|Dual Port|3 Port|Compact",
        extras="for iPhone Samsung Laptop|with Cable|Power Adapter",
        attrs="fast charging|usb c|compact size|foldable plug|multiple ports|overheat protection|"
        "travel friendly|universal compatibility",
        opts="style:charger_power:0.8|color:electronics_color:0.5",
        price="8 60",
        uses="travel|charging multiple devices",
    ),
    dict(
        cat="electronics",
        query="power banks",
        path=f"{_PHONE_ACCESSORIES} › Chargers & Power Adapters › Portable Power Banks",
        nouns="Power Bank|Portable Charger|Battery Pack|Magnetic Power Bank",
        goal="a|power bank|a|portable charger|a|battery pack",
        words="Slim|Fast Charging|Magnetic|High Capacity|Mini|Solar",
        extras="with LED Display|with Built in Cables|for iPhone Android",
        attrs="fast charging|long battery life|usb c|compact size|led display|easy carry|multiple ports|"
        "wireless charging|high capacity",
        opts="capacity:battery_capacity:0.85|color:electronics_color:0.7",
        price="15 80",
        uses="travel and camping|charging on the go",
    ),
    dict(
        cat="electronics",
        query="wireless chargers",
        path=f"{_PHONE_ACCESSORIES} › Chargers & Power Adapters › Wireless Chargers",
        nouns="Wireless Charger|Charging Pad|Charging Station|3 in 1 Charging Stand",
        goal="a|wireless charger|a|charging pad|a|charging station",
        words="Fast|3 in 1|Magnetic|Foldable|15W|Slim",
        extras="for iPhone AirPods Apple Watch|for Samsung Galaxy|with Adapter",
        attrs="wireless charging|fast charging|non slip|led indicator|case friendly|overheat protection|"
        "compact size|multiple devices",
        opts="color:electronics_color:0.9",
        price="12 70",
        uses="the nightstand|the office desk",
    ),
    dict(
        cat="electronics",
        query="laptop sleeves",
        path=f"{_ELECTRONICS} › Computers & Accessories › Laptop Accessories › Bags, Cases & Sleeves › Sleeves",
        nouns="Laptop Sleeve|Laptop Case|Laptop Bag|Laptop Backpack",
        goal="a|laptop sleeve|a|laptop bag|a|laptop case",
        words="Slim|Water Resistant|Shockproof|Padded|Business|Felt",
        extras="for 13-14 Inch MacBook|for 15.6 Inch Laptop|with Pocket",
        attrs="water resistant|shock absorbing|easy carry|zipper closure|lightweight|padded|multiple pockets|"
        "durable fabric",
        opts="size:screen_size:0.5|color:bag_color:0.9",
        price="12 70",
        uses="work and school|business travel",
    ),
    dict(
        cat="electronics",
        query="keyboards",
        path=f"{_PERIPHERALS} › Keyboards",
        nouns="Mechanical Keyboard|Wireless Keyboard|Gaming Keyboard|Keyboard|Keyboard and Mouse Combo",
        goal="a|keyboard|a|mechanical keyboard|a|wireless keyboard",
        words="RGB Backlit|Compact 60%|Full Size|Ergonomic|Quiet|Hot Swappable",
        extras="for Mac Windows|with Wrist Rest|for PC Gaming",
        attrs="backlit keys|plug and play|ergonomic design|rechargeable|quiet typing|anti ghosting|"
        "multi device|long battery life|spill resistant",
        opts="style:switch_type:0.5|color:electronics_color:0.8|size:connectivity:0.4",
        price="20 150",
        uses="gaming and typing|the office",
    ),
    dict(
        cat="electronics",
        query="computer mice",
        path=f"{_PERIPHERALS} › Keyboards, Mice & Accessories › Mice",
        nouns="Wireless Mouse|Gaming Mouse|Ergonomic Mouse|Bluetooth Mouse|Vertical Mouse",
        goal="a|mouse|a|wireless mouse|a|computer mouse",
        words="Silent|Rechargeable|Ergonomic|RGB|Lightweight|Portable",
        extras="for Laptop PC Mac|with USB Receiver|with Programmable Buttons",
        attrs="ergonomic design|plug and play|rechargeable|silent click|long battery life|adjustable dpi|"
        "multi device|lightweight",
        opts="color:electronics_color:0.85|style:connectivity:0.4",
        price="8 90",
        uses="work and gaming|laptops on the go",
    ),
    dict(
        cat="electronics",
        query="webcams",
        path=f"{_PERIPHERALS} › Audio & Video Accessories › Webcams",
        nouns="Webcam|HD Webcam|Streaming Webcam|Web Camera",
        goal="a|webcam|a|web camera|an|hd webcam",
        words="1080P|4K|2K|Autofocus|Wide Angle|Streaming",
        extras="with Microphone|with Privacy Cover|for Zoom Video Calls",
        attrs="high definition|built in microphone|plug and play|privacy cover|auto focus|wide angle|"
        "low light correction|usb powered",
        opts="style:resolution:0.7|color:electronics_color:0.4",
        price="20 130",
        uses="video calls|streaming",
    ),
    dict(
        cat="electronics",
        query="security cameras",
        path=f"{_ELECTRONICS} › Camera & Photo › Video Surveillance › Surveillance Cameras › Dome Cameras",
        nouns="Security Camera|Outdoor Camera|Indoor Camera|Pan Tilt Camera|Doorbell Camera",
        goal="a|security camera|a|home security camera|an|outdoor camera",
        words="Wireless|2K|Solar Powered|Battery Powered|WiFi|Pan Tilt",
        extras="with Color Night Vision|with Motion Detection|for Home Security",
        attrs="night vision|motion detection|two way audio|easy install|water resistant|cloud storage|"
        "high definition|wireless|dual band",
        opts="style:camera_pack:0.7|color:electronics_color:0.4",
        price="25 200",
        uses="home security|watching pets",
    ),
    dict(
        cat="electronics",
        query="smart watches",
        path=f"{_ELECTRONICS} › Wearable Technology › Smartwatches",
        nouns="Smart Watch|Fitness Tracker|Smartwatch|Sports Watch",
        goal="a|smart watch|a|fitness tracker|a|smartwatch",
        words="Fitness|Waterproof|AMOLED|GPS|Rugged|Slim",
        extras="with Heart Rate Monitor|for Android iPhone|with Call Function",
        attrs="heart rate|sleep monitor|water resistant|long battery life|fitness tracking|bluetooth call|"
        "touch screen|step counter|blood oxygen",
        opts="color:electronics_color:0.9|size:band_size:0.5",
        price="25 250",
        uses="workouts and daily health|everyday wear",
    ),
    dict(
        cat="electronics",
        query="watch bands",
        path=f"{_ELECTRONICS} › Wearable Technology › Accessories › Bands",
        nouns="Watch Band|Sport Band|Silicone Band|Leather Band|Replacement Strap",
        goal="a|watch band|a|replacement band|a|sport band",
        words="Silicone|Leather|Stainless Steel|Nylon Loop|Magnetic|Braided",
        extras="Compatible with Apple Watch|for Women Men|3 Pack",
        attrs="easy install|soft material|adjustable fit|water resistant|quick release|durable material|"
        "breathable|sweat resistant",
        opts="size:band_size:0.9|color:case_color:0.85",
        price="6 35",
        uses="swapping styles|workouts",
    ),
    dict(
        cat="electronics",
        query="memory cards",
        path=f"{_ELECTRONICS} › Computers & Accessories › Data Storage › Memory Cards › Micro SD Cards",
        nouns="Micro SD Card|Memory Card|SD Card|MicroSDXC Card",
        goal="a|micro sd card|a|memory card|an|sd card",
        words="High Speed|UHS-I|A2|U3|V30|Extreme",
        extras="with Adapter|for Nintendo Switch|for Dash Cam",
        attrs="high speed|4k ultra hd|waterproof|shock proof|temperature proof|x ray proof|adapter included",
        opts="capacity:storage_capacity:0.9|style:pack_n:0.4",
        price="6 80",
        uses="cameras and phones|gaming consoles",
    ),
    dict(
        cat="electronics",
        query="external hard drives",
        path=f"{_ELECTRONICS} › Computers & Accessories › Data Storage › External Hard Drives",
        nouns="External Hard Drive|Portable SSD|Portable Hard Drive|External SSD",
        goal="an|external hard drive|a|portable ssd|a|portable hard drive",
        words="Portable|Rugged|Slim|USB 3.0|USB C|High Speed",
        extras="for PC Mac PS5|with Backup Software|Shock Resistant",
        attrs="plug and play|high speed|usb c|shock resistant|compact size|password protection|"
        "backup software|usb powered",
        opts="capacity:drive_capacity:0.9|color:electronics_color:0.6",
        price="40 250",
        uses="backups and file transfer|gaming libraries",
    ),
    dict(
        cat="electronics",
        query="tv wall mounts",
        path=f"{_ELECTRONICS} › Television & Video › Accessories › TV Mounts, Stands & Turntables › TV Wall Mounts",
        nouns="TV Wall Mount|Full Motion TV Mount|Tilting TV Mount|TV Bracket",
        goal="a|tv wall mount|a|tv mount|a|wall mount for my tv",
        words="Full Motion|Tilting|Fixed|Swivel|Articulating|Low Profile",
        extras="for Most 32-75 Inch TVs|Max VESA 600x400|Holds up to 132 lbs",
        attrs="easy install|heavy duty|full motion|tilt function|hardware included|cable management|"
        "steel frame|space saving",
        opts="size:mount_size:0.8",
        price="15 90",
        uses="living rooms and bedrooms|saving space",
    ),
    dict(
        cat="electronics",
        query="monitors",
        path=f"{_ELECTRONICS} › Computers & Accessories › Monitors",
        nouns="Computer Monitor|Gaming Monitor|Curved Monitor|Portable Monitor|Monitor",
        goal="a|monitor|a|computer monitor|a|gaming monitor",
        words="IPS|Curved|165Hz|4K UHD|Frameless|FHD|QHD",
        extras="with Speakers|with HDMI DisplayPort|Eye Care",
        attrs="high definition|eye care|frameless design|adjustable stand|vesa mount|fast response|"
        "built in speakers|hdr support|anti glare",
        opts="size:screen_size:0.8|style:resolution:0.4",
        price="80 450",
        uses="work and gaming|dual monitor setups",
    ),
    dict(
        cat="electronics",
        query="gaming headsets",
        path=f"{_ELECTRONICS} › Video Games › Accessories › Headsets",
        nouns="Gaming Headset|Headset|Wireless Gaming Headset|Over Ear Headset",
        goal="a|gaming headset|a|headset|a|wireless gaming headset",
        words="Surround Sound|RGB|Wireless|Noise Cancelling|Lightweight|Stereo",
        extras="for PS5 PS4 Xbox PC|with Mic|with Memory Foam Ear Pads",
        attrs="noise cancelling|built in microphone|surround sound|memory foam|long battery life|"
        "plug and play|rgb lighting|lightweight|stereo sound",
        opts="color:electronics_color:0.85|style:connectivity:0.4",
        price="20 180",
        uses="online gaming|voice chat",
    ),
    dict(
        cat="electronics",
        query="tv remote",
        path=f"{_ELECTRONICS} › Television & Video › Accessories › Remote Controls",
        nouns="Replacement Remote|Universal Remote|TV Remote Control|Voice Remote",
        goal="a|tv remote|a|replacement remote|a|universal remote",
        words="Universal|Replacement|Backlit|Voice|Smart",
        extras="for Smart TVs|No Setup Required|with Netflix Buttons",
        attrs="no programming|easy use|batteries included|backlit keys|universal compatibility|"
        "long range|ergonomic design",
        opts="size:remote_model:0.8",
        price="6 35",
        uses="smart tvs|replacing a lost remote",
    ),
    dict(
        cat="electronics",
        query="ring lights",
        path=f"{_ELECTRONICS} › Camera & Photo › Lighting & Studio › Continuous Output Lighting › Ring Lights",
        nouns="Ring Light|Selfie Ring Light|LED Ring Light|Video Light",
        goal="a|ring light|a|selfie ring light|an|led ring light",
        words="10 Inch|18 Inch|Dimmable|Desktop|Clip On|Portable",
        extras="with Tripod Stand and Phone Holder|for Zoom Makeup TikTok|with Remote",
        attrs="dimmable|adjustable tripod|led light|usb powered|phone holder|remote control|easy install|"
        "multiple color modes",
        opts="size:hair_length:0.5|color:tool_color:0.5",
        price="12 80",
        uses="video calls and streaming|makeup and selfies",
    ),
    dict(
        cat="electronics",
        query="tablet cases",
        path=f"{_ELECTRONICS} › Computers & Accessories › Tablet Accessories › Bags, Cases & Sleeves › Cases",
        nouns="Tablet Case|iPad Case|Folio Case|Keyboard Case|Kids Case",
        goal="a|tablet case|an|ipad case|a|case for my tablet",
        words="Slim|Trifold|Shockproof|Rotating|Smart|Rugged",
        extras="with Pencil Holder|with Keyboard|Auto Sleep Wake",
        attrs="auto sleep wake|shock absorbing|pencil holder|slim fit|stand function|easy install|"
        "scratch resistant|kid friendly",
        opts="size:tablet_model:0.9|color:case_color:0.85",
        price="10 60",
        uses="school and travel|everyday protection",
    ),
]


def _parse(entry: dict) -> ProductType:
    goal_parts = _split(entry["goal"])
    goal_nouns = tuple(zip(goal_parts[0::2], goal_parts[1::2]))
    options = []
    for spec in _split(entry["opts"]):
        name, pool, probability = spec.split(":")
        options.append(OptionSpec(name, POOLS[pool], float(probability)))
    low, high = (float(value) for value in entry["price"].split())
    return ProductType(
        category=entry["cat"],
        query=entry["query"],
        path=entry["path"],
        nouns=_split(entry["nouns"]),
        goal_nouns=goal_nouns,
        leads=_split(entry.get("leads", "")) or ("",),
        words=_split(entry["words"]),
        extras=_split(entry["extras"]),
        attributes=_split(entry["attrs"]),
        options=tuple(options),
        price=(low, high),
        uses=_split(entry["uses"]),
        weight=0.0,
    )


def _weighted(types: list[ProductType]) -> tuple[ProductType, ...]:
    """Spread each category's weight evenly over its types."""
    counts = {category: sum(t.category == category for t in types) for category in _CATEGORY_WEIGHTS}
    return tuple(
        ProductType(**{**t.__dict__, "weight": _CATEGORY_WEIGHTS[t.category] / counts[t.category]}) for t in types
    )


PRODUCT_TYPES: tuple[ProductType, ...] = _weighted([_parse(entry) for entry in _TYPE_TABLE])
CATEGORY_WEIGHTS: dict[str, float] = dict(_CATEGORY_WEIGHTS)
_BY_QUERY: dict[str, ProductType] = {t.query: t for t in PRODUCT_TYPES}
assert len(_BY_QUERY) == len(PRODUCT_TYPES), "product type queries must be unique"


def product_type(query: str) -> ProductType | None:
    """The generated product type whose search query is ``query`` (None for other catalogs' queries)."""
    return _BY_QUERY.get(query)
