"""The shop's seed data as code: categories, partners, products, customers, orders, offers.

Pure Python with one fixed seed and absolute dates, so that the seeding script (run inside
the site's Django environment from a JSON dump of :func:`seed_data`) and the tasks'
``sample`` (which draws parameters without touching the database) see the same rows.
Stdlib only: cheap to import.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from decimal import Decimal
from typing import Any

#: Seed of every random choice below; change it (and bump ShopSite.version) to get other data.
SEED = 20240917

#: Top-level category -> leaf categories -> (brands, product nouns).
CATEGORY_TREE: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "Electronics": {
        "Phones": (("Nova", "Orion", "Pixelon", "Zenfone"), ("Smartphone", "Phone Case", "Charger", "Screen Guard")),
        "Laptops": (("Lumen", "Vertex", "Aspira"), ("Ultrabook", "Laptop Stand", "Laptop Sleeve", "Docking Station")),
        "Audio": (("Sonora", "Bassline", "Echo"), ("Headphones", "Earbuds", "Speaker", "Soundbar")),
        "Cameras": (("Kestrel", "Lynx"), ("Mirrorless Camera", "Tripod", "Camera Bag", "Lens Cap")),
    },
    "Home & Kitchen": {
        "Cookware": (("Copperline", "Ironhearth"), ("Frying Pan", "Saucepan", "Dutch Oven", "Wok")),
        "Furniture": (("Oakwood", "Nordhus"), ("Bookshelf", "Desk Chair", "Side Table", "Footstool")),
        "Lighting": (("Glowmark", "Lumina"), ("Desk Lamp", "Floor Lamp", "LED Strip", "Pendant Light")),
    },
    "Books": {
        "Fiction": (("Harbor Press", "Quill"), ("Mystery Novel", "Fantasy Saga", "Short Stories", "Thriller")),
        "Science": (("Atlas Books", "Meridian"), ("Physics Primer", "Astronomy Guide", "Biology Atlas", "Chemistry Handbook")),
        "Cooking": (("Saffron House", "Basil"), ("Baking Book", "Vegan Recipes", "Pasta Cookbook", "Spice Guide")),
    },
    "Sports & Outdoors": {
        "Camping": (("Trailhead", "Summit"), ("Tent", "Sleeping Bag", "Camp Stove", "Headlamp")),
        "Cycling": (("Velocity", "Pedalworks"), ("Bike Helmet", "Bike Lock", "Water Bottle", "Cycling Gloves")),
        "Fitness": (("Corefit", "Ironclad"), ("Yoga Mat", "Dumbbell Set", "Jump Rope", "Resistance Band")),
    },
    "Clothing": {
        "Men": (("Tailor & Co", "Rugged"), ("Denim Jacket", "Oxford Shirt", "Chinos", "Wool Sweater")),
        "Women": (("Aurora", "Bellamy"), ("Rain Coat", "Linen Dress", "Cardigan", "Ankle Boots")),
        "Kids": (("Sprout", "Little Fox"), ("Hoodie", "Sneakers", "Pajama Set", "Beanie")),
    },
    "Toys & Games": {
        "Board Games": (("Meeple", "Gambit"), ("Strategy Game", "Party Game", "Chess Set", "Card Game")),
        "Puzzles": (("Jigsaw Lab", "Brainy"), ("1000-Piece Puzzle", "3D Puzzle", "Puzzle Mat", "Logic Puzzle")),
    },
}
COLOURS = ("Black", "White", "Red", "Blue", "Green", "Grey", "Orange", "Teal", "Navy", "Olive")
PARTNERS = ("Northwind Supply", "Acme Wholesale", "Blue Harbor Trading")
PRODUCT_COUNT = 320
CUSTOMER_COUNT = 200
ORDER_COUNT = 420
#: Oscar's order status pipeline (status -> statuses it may move to).
ORDER_PIPELINE: dict[str, tuple[str, ...]] = {
    "Pending": ("Being processed", "Cancelled"),
    "Being processed": ("Shipped", "Cancelled"),
    "Shipped": ("Complete", "Returned"),
    "Complete": ("Returned",),
    "Returned": (),
    "Cancelled": (),
}
STATUS_WEIGHTS = (("Pending", 3), ("Being processed", 3), ("Shipped", 4), ("Complete", 8), ("Cancelled", 2),
                  ("Returned", 1))
FIRST = ("Emma", "Liam", "Olivia", "Noah", "Ava", "Elijah", "Sophia", "Lucas", "Mia", "Mason", "Amelia", "Ethan",
         "Harper", "Logan", "Evelyn", "James", "Abigail", "Aiden", "Ella", "Jacob", "Grace", "Henry", "Chloe",
         "Samuel", "Zoe", "Daniel", "Nora", "Owen", "Lily", "Leo")
LAST = ("Smith", "Johnson", "Brown", "Taylor", "Miller", "Wilson", "Moore", "Clark", "Lewis", "Walker", "Hall",
        "Young", "King", "Wright", "Scott", "Green", "Baker", "Adams", "Nelson", "Carter", "Mitchell", "Turner",
        "Parker", "Evans", "Edwards", "Collins", "Stewart", "Morris", "Reed", "Cook")
STREETS = ("Maple Street", "Oak Avenue", "Pine Road", "Cedar Lane", "Elm Street", "Birch Way", "Harbour Road",
           "Mill Lane", "Station Road", "Church Street", "Park Avenue", "Victoria Road")
CITIES = (("London", "GB"), ("Manchester", "GB"), ("Leeds", "GB"), ("Bristol", "GB"), ("Edinburgh", "GB"),
          ("Dublin", "IE"), ("Cork", "IE"), ("Paris", "FR"), ("Lyon", "FR"), ("Berlin", "DE"), ("Hamburg", "DE"),
          ("New York", "US"), ("Boston", "US"), ("Chicago", "US"))
COUNTRY_NAMES = {"GB": "United Kingdom", "IE": "Ireland", "FR": "France", "DE": "Germany", "US": "United States"}
FIRST_ORDER_NUMBER = 100001
ORDER_START = dt.datetime(2024, 1, 2, 9, 0, tzinfo=dt.timezone.utc)
#: The server's "now" when it starts (shop_serve.py; the tracker's instant too): after every seeded date.
FROZEN_NOW = dt.datetime(2025, 6, 2, 9, 0, tzinfo=dt.timezone.utc)

#: The seeded accounts tasks log in as (email -> password); staff first.
STAFF = {"email": "admin@shop.test", "password": "admin-pass-1", "first": "Sam", "last": "Admin"}
TASK_CUSTOMERS = (
    {"email": "emma.smith@shop.test", "password": "customer-pass-1", "first": "Emma", "last": "Smith"},
    {"email": "liam.johnson@shop.test", "password": "customer-pass-2", "first": "Liam", "last": "Johnson"},
)
CUSTOMER_PASSWORD = "customer-pass-0"


def _money(x: float) -> str:
    return str(Decimal(str(x)).quantize(Decimal("0.01")))


def _postcode(rng: random.Random, country: str) -> str:
    if country in ("GB", "IE"):
        return f"{rng.choice('ABCDEFGHJKLMNPRSTW')}{rng.choice('ABCDEFGHJKLMNPRSTW')}{rng.randint(1, 19)} " \
               f"{rng.randint(1, 9)}{rng.choice('ABDEFGHJLNPQRSTUWXYZ')}{rng.choice('ABDEFGHJLNPQRSTUWXYZ')}"
    return f"{rng.randint(10000, 99999)}"


def _address(rng: random.Random, first: str, last: str) -> dict[str, str]:
    city, country = rng.choice(CITIES)
    return {"first_name": first, "last_name": last, "line1": f"{rng.randint(1, 240)} {rng.choice(STREETS)}",
            "line4": city, "postcode": _postcode(rng, country), "country": country}


@functools.lru_cache(maxsize=1)
def seed_data() -> dict[str, Any]:
    """The whole seed data set (JSON-serialisable; cached, do not mutate)."""
    rng = random.Random(SEED)
    categories = []
    leaves = []
    for top, subs in CATEGORY_TREE.items():
        categories.append({"name": top, "parent": None})
        for leaf in subs:
            categories.append({"name": leaf, "parent": top})
            leaves.append((top, leaf))
    products = []
    titles: set[str] = set()
    while len(products) < PRODUCT_COUNT:
        top, leaf = leaves[len(products) % len(leaves)]
        brands, nouns = CATEGORY_TREE[top][leaf]
        title = f"{rng.choice(brands)} {rng.choice(COLOURS)} {rng.choice(nouns)}"
        if title in titles:
            title = f"{title} {rng.choice(('Pro', 'Mini', 'Plus', 'Lite', 'Max', 'II', 'Classic'))}"
        if title in titles:
            continue
        titles.add(title)
        i = len(products)
        price = rng.choice((4.99, 9.5, 12.0, 14.99, 19.99, 24.5, 29.0, 34.99, 49.99, 59.0, 79.99, 99.0, 129.0,
                            149.99, 199.0, 249.99, 399.0))
        products.append({
            "upc": f"MAG{i + 1:05d}", "title": title, "category": leaf, "top": top,
            "description": f"The {title} from our {leaf.lower()} range. Sturdy, well reviewed and shipped within "
                           f"two working days.",
            "price": _money(price), "stock": rng.choice((0, 3, 8, 15, 25, 40, 60, 100)) if i % 11 else 0,
            "partner": PARTNERS[i % len(PARTNERS)], "sku": f"SKU-{i + 1:05d}",
            "colour": [c for c in COLOURS if c in title.split()][0],
        })
    customers = [dict(c, address=_address(rng, c["first"], c["last"])) for c in TASK_CUSTOMERS]
    while len(customers) < CUSTOMER_COUNT:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        email = f"{first.lower()}.{last.lower()}{len(customers)}@example.com"
        customers.append({"email": email, "password": CUSTOMER_PASSWORD, "first": first, "last": last,
                          "address": _address(rng, first, last)})
    for i, c in enumerate(customers):
        c["joined"] = (dt.datetime(2023, 6, 1, 10, 0, tzinfo=dt.timezone.utc)
                       + dt.timedelta(days=i % 180, minutes=7 * i)).isoformat()
    statuses = [s for s, w in STATUS_WEIGHTS for _ in range(w)]
    orders = []
    for k in range(ORDER_COUNT):
        cust = customers[rng.randrange(len(customers))]
        lines = []
        for p in rng.sample(products, rng.choice((1, 1, 1, 2, 2, 3, 4))):
            qty = rng.choice((1, 1, 1, 2, 3))
            lines.append({"upc": p["upc"], "title": p["title"], "quantity": qty, "unit_price": p["price"],
                          "line_price": _money(Decimal(p["price"]) * qty), "partner": p["partner"], "sku": p["sku"]})
        total = sum((Decimal(ln["line_price"]) for ln in lines), Decimal("0"))
        placed = ORDER_START + dt.timedelta(hours=k * 20 + rng.randint(0, 15), minutes=rng.randint(0, 59))
        orders.append({"number": str(FIRST_ORDER_NUMBER + k), "email": cust["email"], "lines": lines,
                       "total": _money(total), "status": rng.choice(statuses), "placed": placed.isoformat(),
                       "address": dict(cust["address"])})
    offers = [
        {"name": "Ten percent off books", "type": "Site", "benefit": "Percentage", "value": "10.00",
         "range": "Books", "categories": ["Fiction", "Science", "Cooking"], "min_quantity": 1},
        {"name": "Five off camping gear", "type": "Site", "benefit": "Absolute", "value": "5.00",
         "range": "Camping gear", "categories": ["Camping"], "min_quantity": 2},
        {"name": "Welcome voucher offer", "type": "Voucher", "benefit": "Percentage", "value": "15.00",
         "range": "Everything", "categories": [], "min_quantity": 1},
    ]
    vouchers = [{"name": "Welcome fifteen", "code": "WELCOME15", "offer": "Welcome voucher offer"}]
    return {"categories": categories, "partners": list(PARTNERS), "products": products, "customers": customers,
            "orders": orders, "offers": offers, "vouchers": vouchers, "staff": STAFF,
            "pipeline": {k: list(v) for k, v in ORDER_PIPELINE.items()}}


def product_by_title(title: str) -> dict[str, Any]:
    """The seeded product with this title."""
    return next(p for p in seed_data()["products"] if p["title"] == title)


def order_by_number(number: str) -> dict[str, Any]:
    """The seeded order with this number."""
    return next(o for o in seed_data()["orders"] if o["number"] == number)
