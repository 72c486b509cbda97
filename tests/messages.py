"""The translation catalogs of ``dshweb/locale/``: read each ``django.po`` and compile it into
the ``django.mo`` beside it, in pure Python (Babel: no GNU gettext needed), the same bytes
every time. ``python -m tests.messages`` compiles them (``scripts/messages`` runs it);
``tests/site/test_translations.py`` checks that the ``.mo`` files are what this makes."""

from __future__ import annotations

import io
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE = Path(__file__).resolve().parent.parent / "dshweb" / "locale"


def catalogs() -> list[Path]:
    return sorted(LOCALE.glob("*/LC_MESSAGES/django.po"))


def read(po: Path) -> Catalog:
    with po.open("rb") as handle:
        return read_po(handle, abort_invalid=True)


def compiled(po: Path) -> bytes:
    out = io.BytesIO()
    write_mo(out, read(po))
    return out.getvalue()


def main() -> None:
    for po in catalogs():
        po.with_suffix(".mo").write_bytes(compiled(po))
        print(f"compiled {po.relative_to(LOCALE.parent.parent)}")


if __name__ == "__main__":
    main()
