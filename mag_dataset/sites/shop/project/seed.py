"""Load the shop's seed data (a JSON dump of ``mag_dataset.sites.shop.seed_data.seed_data()``)
into a freshly migrated Oscar database. Run inside the site's venv::

    MAG_SHOP_HOME=... DJANGO_SETTINGS_MODULE=settings python seed.py seed.json 8471

Deterministic: fixed dates, fixed order of inserts, images drawn with PIL from the product's
colour, one password hash per distinct password (hashing 200 passwords would take minutes).
"""

import datetime as dt
import io
import json
import sys
from decimal import Decimal

import django

django.setup()

from django.contrib.auth.hashers import make_password  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.contrib.sites.models import Site  # noqa: E402
from django.core.files.base import ContentFile  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from oscar.apps.address.models import Country, UserAddress  # noqa: E402
from oscar.apps.catalogue.models import (Category, Product, ProductCategory, ProductClass,  # noqa: E402
                                         ProductImage)
from oscar.apps.offer.models import Benefit, Condition, ConditionalOffer, Range  # noqa: E402
from oscar.apps.order.models import Line, Order, ShippingAddress  # noqa: E402
from oscar.apps.partner.models import Partner, StockRecord  # noqa: E402
from oscar.apps.voucher.models import Voucher  # noqa: E402

RGB = {"Black": (40, 40, 40), "White": (235, 235, 235), "Red": (200, 50, 50), "Blue": (50, 90, 200),
       "Green": (60, 160, 80), "Grey": (140, 140, 140), "Orange": (240, 140, 40), "Teal": (40, 150, 150),
       "Navy": (30, 40, 110), "Olive": (120, 130, 50)}


def _image(colour: str, title: str) -> bytes:
    img = Image.new("RGB", (160, 160), RGB[colour])
    draw = ImageDraw.Draw(img)
    draw.rectangle((20, 20, 140, 140), outline=(255, 255, 255) if colour != "White" else (0, 0, 0), width=4)
    initials = "".join(w[0] for w in title.split()[:3] if w[0].isalnum())
    draw.text((60, 72), initials, fill=(255, 255, 255) if colour != "White" else (0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def _site(port: str) -> Site:
    site = Site.objects.get(pk=1)
    site.domain, site.name = f"127.0.0.1:{port}", "MAG Shop"
    site.save()
    return site


def _countries() -> dict:
    countries = {}
    for code, name in (("GB", "United Kingdom"), ("IE", "Ireland"), ("FR", "France"), ("DE", "Germany"),
                       ("US", "United States")):
        countries[code] = Country.objects.create(iso_3166_1_a2=code, name=name, printable_name=name,
                                                 is_shipping_country=True, display_order=0)
    return countries


def _categories(data: dict) -> dict:
    cats = {}
    for c in data["categories"]:
        if c["parent"] is None:
            cats[c["name"]] = Category.add_root(name=c["name"], is_public=True)
        else:
            cats[c["name"]] = cats[c["parent"]].add_child(name=c["name"], is_public=True)
    return cats


def _products(data: dict, goods: ProductClass, cats: dict, partners: dict) -> tuple[dict, dict]:
    """Products with category, stock record and image, one hour apart: ``({upc: product}, {upc: stock})``."""
    created = dt.datetime(2023, 5, 1, 8, 0, tzinfo=dt.timezone.utc)
    products, stock = {}, {}
    for i, p in enumerate(data["products"]):
        prod = Product.objects.create(upc=p["upc"], title=p["title"], description=p["description"],
                                      product_class=goods, structure="standalone", is_public=True)
        Product.objects.filter(pk=prod.pk).update(date_created=created + dt.timedelta(hours=i),
                                                  date_updated=created + dt.timedelta(hours=i))
        ProductCategory.objects.create(product=prod, category=cats[p["category"]])
        stock[p["upc"]] = StockRecord.objects.create(product=prod, partner=partners[p["partner"]],
                                                     partner_sku=p["sku"], price_currency="GBP",
                                                     price=Decimal(p["price"]), num_in_stock=p["stock"])
        img = ProductImage(product=prod, caption=p["title"], display_order=0)
        img.original.save(f"{p['upc'].lower()}.png", ContentFile(_image(p["colour"], p["title"])), save=False)
        img.save()
        products[p["upc"]] = prod
    return products, stock


def _users(data: dict, countries: dict) -> dict:
    """The staff account and the customers with their default address: ``{email: user}`` of customers."""
    hashes = {}
    users = {}
    staff = data["staff"]
    hashes[staff["password"]] = make_password(staff["password"])
    User.objects.create(username="admin", email=staff["email"], first_name=staff["first"], last_name=staff["last"],
                        is_staff=True, is_superuser=True, password=hashes[staff["password"]],
                        date_joined=dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc))
    for c in data["customers"]:
        if c["password"] not in hashes:
            hashes[c["password"]] = make_password(c["password"])
        u = User.objects.create(username=c["email"].split("@")[0][:150], email=c["email"], first_name=c["first"],
                                last_name=c["last"], password=hashes[c["password"]],
                                date_joined=dt.datetime.fromisoformat(c["joined"]))
        a = c["address"]
        UserAddress.objects.create(user=u, title="", first_name=a["first_name"], last_name=a["last_name"],
                                   line1=a["line1"], line4=a["line4"], postcode=a["postcode"],
                                   country=countries[a["country"]], is_default_for_shipping=True,
                                   is_default_for_billing=True)
        users[c["email"]] = u
    return users


def _orders(data: dict, site: Site, users: dict, countries: dict, partners: dict, stock: dict, products: dict) -> None:
    for o in data["orders"]:
        a = o["address"]
        ship = ShippingAddress.objects.create(first_name=a["first_name"], last_name=a["last_name"],
                                              line1=a["line1"], line4=a["line4"], postcode=a["postcode"],
                                              country=countries[a["country"]])
        total = Decimal(o["total"])
        order = Order.objects.create(number=o["number"], site=site, user=users[o["email"]], currency="GBP",
                                     total_incl_tax=total, total_excl_tax=total, shipping_incl_tax=Decimal("0"),
                                     shipping_excl_tax=Decimal("0"), shipping_method="Free shipping",
                                     shipping_code="free-shipping", shipping_address=ship, status=o["status"],
                                     date_placed=dt.datetime.fromisoformat(o["placed"]))
        for ln in o["lines"]:
            unit, price = Decimal(ln["unit_price"]), Decimal(ln["line_price"])
            Line.objects.create(order=order, partner=partners[ln["partner"]], partner_name=ln["partner"],
                                partner_sku=ln["sku"], stockrecord=stock[ln["upc"]], product=products[ln["upc"]],
                                title=ln["title"], upc=ln["upc"], quantity=ln["quantity"],
                                line_price_incl_tax=price, line_price_excl_tax=price,
                                line_price_before_discounts_incl_tax=price, line_price_before_discounts_excl_tax=price,
                                unit_price_incl_tax=unit, unit_price_excl_tax=unit, status=o["status"],
                                num_allocated=ln["quantity"])


def _offers_and_vouchers(data: dict, cats: dict) -> None:
    offers = {}
    for k, off in enumerate(data["offers"]):
        rng = Range.objects.create(name=off["range"], includes_all_products=not off["categories"])
        for cname in off["categories"]:
            rng.included_categories.add(cats[cname])
        cond = Condition.objects.create(range=rng, type=Condition.COUNT, value=off["min_quantity"])
        ben = Benefit.objects.create(range=rng, type=off["benefit"], value=Decimal(off["value"]))
        offers[off["name"]] = ConditionalOffer.objects.create(
            name=off["name"], slug=f"offer-{k + 1}", offer_type=off["type"], condition=cond, benefit=ben,
            status=ConditionalOffer.OPEN, priority=k)
    for v in data["vouchers"]:
        vo = Voucher.objects.create(name=v["name"], code=v["code"], usage=Voucher.MULTI_USE,
                                    start_datetime=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
                                    end_datetime=dt.datetime(2030, 12, 31, tzinfo=dt.timezone.utc))
        vo.offers.add(offers[v["offer"]])


def main(path: str, port: str) -> dict:
    data = json.loads(open(path).read())
    site = _site(port)
    countries = _countries()
    goods = ProductClass.objects.create(name="Goods", requires_shipping=True, track_stock=True)
    cats = _categories(data)
    partners = {name: Partner.objects.create(name=name) for name in data["partners"]}
    products, stock = _products(data, goods, cats, partners)
    users = _users(data, countries)
    _orders(data, site, users, countries, partners, stock, products)
    _offers_and_vouchers(data, cats)
    # Oscar numbers an order 100000 + its basket's id: start new baskets above the seeded numbers
    with connection.cursor() as cur:
        cur.execute("DELETE FROM sqlite_sequence WHERE name = 'basket_basket'")
        cur.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('basket_basket', 1000)")
    return {"categories": Category.objects.count(), "products": Product.objects.count(),
            "customers": User.objects.filter(is_staff=False).count(), "staff": User.objects.filter(is_staff=True).count(),
            "orders": Order.objects.count(), "order_lines": Line.objects.count(), "partners": Partner.objects.count(),
            "offers": ConditionalOffer.objects.count(), "vouchers": Voucher.objects.count(),
            "images": ProductImage.objects.count()}


if __name__ == "__main__":
    with transaction.atomic():
        counts = main(sys.argv[1], sys.argv[2])
    call_command("rebuild_index", interactive=False, verbosity=0)
    print("SEEDED " + json.dumps(counts, sort_keys=True))
