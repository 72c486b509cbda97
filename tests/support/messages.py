"""The translation catalogs of ``dshweb/locale/``: read each ``django.po`` and compile it into
the ``django.mo`` beside it, in pure Python (Babel: no GNU gettext needed), the same bytes
every time. ``python -m tests.support.messages`` compiles them (``scripts/messages`` runs it),
after writing each ``.po`` back in the one layout it is kept in (Babel's, no line wrapped:
``makemessages`` wraps at 79 columns, which would change every long message's lines);
``tests/site/test_translations.py`` checks that the ``.mo`` files are what this makes."""

from __future__ import annotations

import io
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

LOCALE = Path(__file__).resolve().parents[2] / "dshweb" / "locale"


def catalogs() -> list[Path]:
    return sorted(LOCALE.glob("*/LC_MESSAGES/django.po"))


def read(po: Path) -> Catalog:
    with po.open("rb") as handle:
        return read_po(handle, abort_invalid=True)


def compiled(po: Path) -> bytes:
    out = io.BytesIO()
    write_mo(out, read(po))
    return out.getvalue()


def unwrapped(po: Path) -> bytes:
    """The catalog ``po`` in the layout it is kept in."""
    out = io.BytesIO()
    write_po(out, read(po), width=0, no_location=True, omit_header=False)
    return out.getvalue()


def main() -> None:
    for po in catalogs():
        po.write_bytes(unwrapped(po))
        po.with_suffix(".mo").write_bytes(compiled(po))
        print(f"compiled {po.relative_to(LOCALE.parent.parent)}")


if __name__ == "__main__":
    main()
