"""Load the shop's generated content (a JSON file from agentgym's generator) into an empty, migrated database.

Bulk inserts through django-oscar's models: partner, product classes and attributes, the category
tree, products with stock records, attribute values and categories, customers with addresses,
orders with lines, reviews (and each product's cached rating), an open basket and a login
session for every account.
"""

import datetime as dt
import json
from collections import defaultdict
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sites.models import Site
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone
from oscar.core.loading import get_model

Partner = get_model("partner", "Partner")
StockRecord = get_model("partner", "StockRecord")
ProductClass = get_model("catalogue", "ProductClass")
ProductAttribute = get_model("catalogue", "ProductAttribute")
ProductAttributeValue = get_model("catalogue", "ProductAttributeValue")
Category = get_model("catalogue", "Category")
Product = get_model("catalogue", "Product")
ProductCategory = get_model("catalogue", "ProductCategory")
ProductReview = get_model("reviews", "ProductReview")
Country = get_model("address", "Country")
ShippingAddress = get_model("order", "ShippingAddress")
Order = get_model("order", "Order")
Line = get_model("order", "Line")
Basket = get_model("basket", "Basket")
UserRecord = get_model("analytics", "UserRecord")

BATCH = 2000


class Command(BaseCommand):
    help = "Load agentgym's generated shop content (JSON) into the database."

    def add_arguments(self, parser):
        parser.add_argument("content", help="the JSON file of generated content")

    @transaction.atomic
    def handle(self, *args, content, **options):
        with open(content) as handle:
            data = json.load(handle)
        Site.objects.update_or_create(id=1, defaults={"domain": "shop.localhost", "name": "Agentgym Shop"})
        partner = Partner.objects.create(name="Agentgym Shop", code="agentgym")
        country = Country.objects.create(
            iso_3166_1_a2="GB",
            iso_3166_1_a3="GBR",
            iso_3166_1_numeric="826",
            printable_name="United Kingdom",
            name="United Kingdom of Great Britain and Northern Ireland",
            is_shipping_country=True,
        )
        products = self.catalogue(data, partner)
        users = self.accounts(data)
        self.orders(data, partner, country, products, users)
        self.reviews(data, products, users)
        self.sessions(data, users)
        self.stdout.write(
            f"seeded {len(products)} products, {len(users)} accounts, {len(data['orders'])} orders, "
            f"{len(data['reviews'])} reviews"
        )

    def catalogue(self, data, partner):
        classes, attributes, categories = {}, {}, {}
        for entry in data["categories"]:
            if entry["parent"] is None:
                product_class = ProductClass.objects.create(
                    name=entry["name"], requires_shipping=True, track_stock=True
                )
                classes[entry["name"]] = product_class
                for code in entry["attributes"]:
                    attributes[entry["name"], code] = ProductAttribute.objects.create(
                        product_class=product_class, name=code.replace("_", " ").capitalize(), code=code, type="text"
                    )
                categories[entry["name"]] = Category.add_root(name=entry["name"])
            else:
                categories[entry["name"]] = categories[entry["parent"]].add_child(name=entry["name"])
        products = Product.objects.bulk_create(
            [
                Product(
                    structure="standalone",
                    is_public=True,
                    upc=item["upc"],
                    title=item["title"],
                    slug=item["slug"],
                    description=item["description"],
                    product_class=classes[item["class"]],
                )
                for item in data["products"]
            ],
            batch_size=BATCH,
        )
        by_upc = {}
        links, stock, values = [], [], []
        for item, product in zip(data["products"], products):
            by_upc[item["upc"]] = product
            links.append(ProductCategory(product=product, category=categories[item["category"]]))
            stock.append(
                StockRecord(
                    product=product,
                    partner=partner,
                    partner_sku=item["upc"],
                    price_currency="GBP",
                    price=Decimal(item["price"]),
                    num_in_stock=item["stock"],
                    num_allocated=0,
                )
            )
            for code, value in item["attributes"].items():
                values.append(
                    ProductAttributeValue(attribute=attributes[item["class"], code], product=product, value_text=value)
                )
        for item, product in zip(data["products"], products):
            product.date_created = product.date_updated = dt.datetime.fromisoformat(item["added"])
        Product.objects.bulk_update(products, ["date_created", "date_updated"], batch_size=BATCH)
        ProductCategory.objects.bulk_create(links, batch_size=BATCH)
        StockRecord.objects.bulk_create(stock, batch_size=BATCH)
        ProductAttributeValue.objects.bulk_create(values, batch_size=BATCH)
        return by_upc

    def accounts(self, data):
        User = get_user_model()
        password = make_password(data["password"])  # one hash for every account (hashing is slow)
        admin = data["admin"]
        people = [
            User(
                username=admin["username"],
                email=admin["email"],
                first_name=admin["first_name"],
                last_name=admin["last_name"],
                is_staff=True,
                is_superuser=True,
                password=password,
                date_joined=dt.datetime(2021, 6, 1, tzinfo=dt.timezone.utc),
            )
        ] + [
            User(
                username=person["username"],
                email=person["email"],
                first_name=person["first_name"],
                last_name=person["last_name"],
                password=password,
                date_joined=dt.datetime.fromisoformat(person["joined"]),
            )
            for person in data["customers"]
        ]
        created = User.objects.bulk_create(people, batch_size=BATCH)
        Basket.objects.bulk_create([Basket(owner=user, status="Open") for user in created], batch_size=BATCH)
        return {user.username: user for user in created}

    def orders(self, data, partner, country, products, users):
        people = {person["username"]: person for person in data["customers"]}
        addresses = ShippingAddress.objects.bulk_create(
            [
                ShippingAddress(
                    first_name=people[order["customer"]]["first_name"],
                    last_name=people[order["customer"]]["last_name"],
                    line1=people[order["customer"]]["street"],
                    line4=people[order["customer"]]["city"],
                    postcode=people[order["customer"]]["postcode"],
                    country=country,
                )
                for order in data["orders"]
            ],
            batch_size=BATCH,
        )
        rows = []
        for order, address in zip(data["orders"], addresses):
            shipping = Decimal(order["shipping"])
            total = sum(Decimal(line["unit_price"]) * line["quantity"] for line in order["lines"]) + shipping
            rows.append(
                Order(
                    number=order["number"],
                    site_id=1,
                    user=users[order["customer"]],
                    currency="GBP",
                    total_incl_tax=total,
                    total_excl_tax=total,
                    shipping_incl_tax=shipping,
                    shipping_excl_tax=shipping,
                    shipping_method="Free shipping" if shipping == 0 else "Standard shipping",
                    shipping_code="free-shipping" if shipping == 0 else "standard",
                    shipping_address=address,
                    status=order["status"],
                    date_placed=dt.datetime.fromisoformat(order["placed"]),
                )
            )
        created = Order.objects.bulk_create(rows, batch_size=BATCH)
        stock = {record.product_id: record for record in StockRecord.objects.all()}
        lines = []
        for order, row in zip(data["orders"], created):
            for line in order["lines"]:
                product = products[line["upc"]]
                unit = Decimal(line["unit_price"])
                price = unit * line["quantity"]
                lines.append(
                    Line(
                        order=row,
                        partner=partner,
                        partner_name=partner.name,
                        partner_sku=line["upc"],
                        stockrecord=stock[product.id],
                        product=product,
                        title=product.title,
                        upc=product.upc,
                        quantity=line["quantity"],
                        line_price_incl_tax=price,
                        line_price_excl_tax=price,
                        line_price_before_discounts_incl_tax=price,
                        line_price_before_discounts_excl_tax=price,
                        unit_price_incl_tax=unit,
                        unit_price_excl_tax=unit,
                        status=order["status"],
                        num_allocated=0 if order["status"] == "Cancelled" else line["quantity"],
                    )
                )
        Line.objects.bulk_create(lines, batch_size=BATCH)
        # The dashboard's per-customer counters (django-oscar's analytics keeps them as orders are placed).
        records = {}
        for order, row in zip(data["orders"], created):
            record = records.setdefault(row.user_id, UserRecord(user_id=row.user_id, total_spent=Decimal(0)))
            record.num_orders += 1
            record.num_order_lines += len(order["lines"])
            record.num_order_items += sum(line["quantity"] for line in order["lines"])
            record.total_spent += row.total_incl_tax
            record.date_last_order = max(filter(None, [record.date_last_order, row.date_placed]))
        UserRecord.objects.bulk_create(records.values(), batch_size=BATCH)

    def reviews(self, data, products, users):
        rows = [
            ProductReview(
                product=products[review["upc"]],
                user=users[review["customer"]],
                score=review["score"],
                title=review["title"],
                body=review["body"],
                status=ProductReview.APPROVED,
            )
            for review in data["reviews"]
        ]
        created = ProductReview.objects.bulk_create(rows, batch_size=BATCH)
        for review, row in zip(data["reviews"], created):
            row.date_created = dt.datetime.fromisoformat(review["date"])
        ProductReview.objects.bulk_update(created, ["date_created"], batch_size=BATCH)
        # The product's cached rating, as django-oscar keeps it (the mean score of approved reviews).
        scores = defaultdict(list)
        for review in data["reviews"]:
            scores[review["upc"]].append(review["score"])
        rated = []
        for upc, values in scores.items():
            product = products[upc]
            product.rating = sum(values) / len(values)
            rated.append(product)
        Product.objects.bulk_update(rated, ["rating"], batch_size=BATCH)

    def sessions(self, data, users):
        store = SessionStore()
        expires = timezone.now() + dt.timedelta(seconds=settings.SESSION_COOKIE_AGE)
        rows = []
        for username, key in data["sessions"].items():
            user = users[username]
            session = {
                "_auth_user_id": str(user.pk),
                "_auth_user_backend": "django.contrib.auth.backends.ModelBackend",
                "_auth_user_hash": user.get_session_auth_hash(),
            }
            rows.append(store.model(session_key=key, session_data=store.encode(session), expire_date=expires))
        store.model.objects.bulk_create(rows, batch_size=BATCH)
