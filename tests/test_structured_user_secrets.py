"""User secrets with public structure: a webhook URL, a database URL, a connection string.

Their scheme, host, port, path words and query names, and a connection string's names and
its protocol and host values, are what every secret of the service shares, and
documentation prints them. Counted as random, they made fragments that matched the
documentation: the first 25 characters of a Slack webhook URL matched its placeholder, a
connection string's first 45 another account's, a database URL's last 40 another URL
beside ``<password>`` (found by a hunting helper). They count nothing now; the secret
parts (the password, the key, the webhook's token) keep their bits and are found.
"""

from __future__ import annotations

import random
import string

from leakcheck.canaries import Secret
from leakcheck.detect import Scanner

_RNG = random.Random(20261207)


def _random(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


SLACK = (
    f"https://hooks.slack.com/services/T{_random(8).upper()}/B{_random(8).upper()}/{_random(24)}"
)
AZURE = (
    "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey="
    f"{_random(86, string.ascii_letters + string.digits + '+/')}==;"
    "EndpointSuffix=core.windows.net"
)
POSTGRES = f"postgresql://orders_app:{_random(20)}@db.prod.internal:5432/orders?sslmode=require"
SECRETS = [
    Secret.from_user(value, id=name)
    for name, value in (("webhook", SLACK), ("storage", AZURE), ("database", POSTGRES))
]

#: documentation of the same services: placeholders, the emulator's published key (a
#: fixed string, written here as its shape), another account's string, another user's URL
DOCS = f"""# Notifications

Set `SLACK_WEBHOOK_URL` to your incoming webhook, for example
`https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX`.

For local development use Azurite:

    DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={"Eby8" * 21}==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;

and in staging:

    DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey=<redacted>;EndpointSuffix=core.windows.net

Database: DATABASE_URL=postgresql://readonly:<password>@db.prod.internal:5432/orders?sslmode=require
"""


def test_documentation_of_the_same_services_holds_no_finding() -> None:
    findings = Scanner(SECRETS, decode=True).scan(DOCS.encode())
    assert [(f.secret_id, f.form) for f in findings] == []


def test_the_secrets_themselves_are_found() -> None:
    leaky = "\n".join(f"configured: {secret.value}" for secret in SECRETS).encode()
    found = {(f.secret_id, f.form) for f in Scanner(SECRETS, decode=True).scan(leaky)}
    assert found == {("webhook", "raw"), ("storage", "raw"), ("database", "raw")}


def test_the_structure_counts_nothing_and_the_secret_parts_keep_their_bits() -> None:
    by_id = {secret.id: secret for secret in SECRETS}
    slack, azure, pg = by_id["webhook"], by_id["storage"], by_id["database"]
    head = len("https://hooks.slack.com/services/")
    assert sum(slack.bits[:head]) == 0
    assert sum(slack.bits[-24:]) > 64  # the webhook's token
    name_at, key_at = AZURE.index("acmeprod"), AZURE.index(";AccountKey=")
    assert sum(azure.bits[:name_at]) == 0  # "DefaultEndpointsProtocol=https;AccountName="
    assert sum(azure.bits[key_at : key_at + len(";AccountKey=")]) == 0
    assert sum(azure.bits[key_at + len(";AccountKey=") : AZURE.index("==;")]) > 128
    assert sum(azure.bits[AZURE.index("==;") + 2 :]) == 0  # ";EndpointSuffix=core.windows.net"
    at = POSTGRES.index("@")
    # host, port, the database's name and "sslmode=" count nothing; "?require" a few bits
    assert sum(pg.bits[at + 1 :]) < 12
    assert sum(pg.bits[at - 20 : at]) > 64  # the password
