#!/usr/bin/env python3
"""Write countries.tsv, languages.tsv and currencies.tsv: `CODE<TAB>English<TAB>French` lines sorted by code.

Reads Debian's iso-codes package (/usr/share/iso-codes/json/iso_3166-1.json, iso_639-2.json, iso_4217.json and
the French catalogues /usr/share/locale/fr/LC_MESSAGES/iso_3166-1.mo, iso_639-2.mo, iso_4217.mo) and the
COUNTRIES and CURRENCIES lists of src/ids.rs, which decide which codes the tables hold.

The TSVs are committed, so building svc-core needs no iso-codes. To refresh them after an iso-codes or ids.rs
change: `apt-get install iso-codes`, then `python3 src/records/names/generate.py` (from src/core, or any directory)
and review the diff. Notes on codes and missing translations go to stderr.
"""

import gettext
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
JSON = Path("/usr/share/iso-codes/json")
MO = Path("/usr/share/locale/fr/LC_MESSAGES")
JSON_NAME = {"countries": "iso_3166-1", "languages": "iso_639-2", "currencies": "iso_4217"}

# ids.rs accepts these currencies but iso-codes 4.15 does not list them yet (both assigned in 2024).
EXTRA_CURRENCIES = {
    "XCG": ("Caribbean Guilder", "Florin caribéen"),
    "ZWG": ("Zimbabwe Gold", "Or du Zimbabwe"),
}

# French strings of iso-codes that are wrong (typos, "castillan" for Spanish), stale ("Zloty (nouveau)"),
# untranslated, or official forms where no common name is translated ("Syrienne, République arabe").
# English ones where the ISO name is not what a picker should show.
FIXES = {
    "countries": {"IR": (None, "Iran"), "LA": (None, "Laos"), "SY": (None, "Syrie"), "TR": (None, "Turquie")},
    "languages": {"el": ("Greek", "Grec"), "es": (None, "Espagnol"), "uz": (None, "Ouzbek")},
    "currencies": {
        "AFN": (None, "Afghani"),
        "AOA": (None, "Kwanza"),
        "AZN": (None, "Manat azerbaïdjanais"),
        "CNY": (None, "Yuan renminbi"),
        "ERN": (None, "Nakfa"),
        "ILS": (None, "Nouveau shekel israélien"),
        "LAK": (None, "Kip laotien"),
        "LRD": (None, "Dollar libérien"),
        "PEN": (None, "Sol"),
        "PLN": (None, "Zloty"),
        "TWD": (None, "Nouveau dollar taïwanais"),
        "VES": (None, "Bolívar souverain"),
    },
}


def note(text):
    print(text, file=sys.stderr)


def ids_list(name):
    """A space-separated const of ids.rs, its `\\` line continuations removed."""
    source = (HERE.parents[1] / "ids.rs").read_text()
    match = re.search(rf'const {name}: &str = "(.*?)";', source, re.S)
    if match is None:
        sys.exit(f"no const {name} in ids.rs")
    return re.sub(r"\\\n\s*", "", match.group(1)).split(" ")


def names(entry, french):
    """English and French names: the common name first, the part before any "; ". French is None if untranslated."""
    english = entry.get("common_name", entry["name"])
    # A missing French common name falls back to the French of the full name.
    fr = french._catalog.get(english) or french._catalog.get(entry["name"])
    return tuple(n and n.split(";")[0].strip() for n in (english, fr))


def table(kind, entries, key, wanted, extra=None):
    with open(MO / f"{JSON_NAME[kind]}.mo", "rb") as catalogue:
        french = gettext.GNUTranslations(catalogue)
    by_code = {e[key]: names(e, french) for e in entries}
    if wanted is None:
        wanted = sorted(by_code)
    else:
        for code in sorted(set(by_code) - set(wanted)):
            note(f"{kind}: {code} is in iso-codes, not in ids.rs: left out")
    rows = []
    for code in sorted(wanted):
        name = by_code.get(code)
        if name is None:
            if code not in (extra or {}):
                sys.exit(f"{kind}: {code} is in ids.rs but neither in iso-codes nor in this script")
            note(f"{kind}: {code} is not in iso-codes: named by this script")
            name = extra[code]
        en, fr = (f or n for f, n in zip(FIXES[kind].get(code, (None, None)), name))
        if fr is None:
            note(f"{kind}: {code} has no French name, using the English one")
            fr = en
        # Display forms: iso-codes writes French language names in lower case ("français").
        rows.append(f"{code}\t{en[:1].upper() + en[1:]}\t{fr[:1].upper() + fr[1:]}\n")
    (HERE / f"{kind}.tsv").write_text("".join(rows))
    note(f"{kind}: {len(rows)} rows")


def load(kind):
    name = JSON_NAME[kind]
    return json.loads((JSON / f"{name}.json").read_text())[name.removeprefix("iso_")]


table("countries", load("countries"), "alpha_2", ids_list("COUNTRIES"))
table("languages", [e for e in load("languages") if "alpha_2" in e], "alpha_2", None)
table("currencies", load("currencies"), "alpha_3", ids_list("CURRENCIES"), EXTRA_CURRENCIES)
