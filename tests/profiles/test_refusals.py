"""Saves the settings page refuses, with the reason on the page and nothing written: a
``cordis.patch.yml`` that is a symbolic link (to a file outside the home, or dangling:
not even read, as it could lead anywhere) and one that is read-only. Real files in a
real home; the tests run as root, where only the mode bits tell a read-only file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from django.test import Client

from dshweb.core.settings.patchfile import EMPTY_SHA256
from dshweb.profiles.models import PatchRevision
from tests.profiles.test_views import HAND_WRITTEN, _form_data, home, staff

pytestmark = pytest.mark.django_db
__all__ = ["home", "staff"]  # the fixtures of tests/profiles/test_views.py

URL = "/settings/sdk/context-truth/"


def _patch(home: Path) -> Path:
    return home / "profiles" / "sdk" / "cordis.patch.yml"


BLIND_SAVE = {"sha256": EMPTY_SHA256, "base_text": "", "quantumPercent": "10"}
"""A save posted without the page (the file cannot be shown)."""


def _save(staff: Client) -> str:
    """Post a changed value; the page answered (not a redirect: nothing was saved)."""
    response = staff.post(URL, _form_data(staff, URL, quantumPercent=10))
    assert response.status_code == 200
    return response.content.decode()


def test_a_link_to_a_file_outside_the_home_is_not_written(
    home: Path, staff: Client, tmp_path: Path
) -> None:
    outside = tmp_path / "outside" / "cordis.patch.yml"
    outside.parent.mkdir()
    outside.write_text(HAND_WRITTEN)
    _patch(home).unlink()
    _patch(home).symlink_to(outside)
    before = outside.stat()
    for page in (staff.get(URL), staff.post(URL, BLIND_SAVE)):
        assert page.status_code == 409
        said = page.content.decode()
        assert 'id="patch-error"' in said
        assert (
            f"{_patch(home)} is a symbolic link: dshweb follows no link inside a DSH home" in said
        )
        assert "quantumPercent" not in said  # nothing of the file it leads to is shown
    assert outside.read_text() == HAND_WRITTEN
    assert outside.stat().st_mtime_ns == before.st_mtime_ns
    assert _patch(home).is_symlink()
    assert sorted(p.name for p in outside.parent.iterdir()) == ["cordis.patch.yml"]
    assert not PatchRevision.objects.exists()


def test_a_dangling_link_creates_nothing(home: Path, staff: Client, tmp_path: Path) -> None:
    target = tmp_path / "nowhere" / "cordis.patch.yml"
    target.parent.mkdir()
    _patch(home).unlink()
    _patch(home).symlink_to(target)
    page = staff.post(URL, BLIND_SAVE)
    assert page.status_code == 409 and "is a symbolic link" in page.content.decode()
    assert not target.exists() and list(target.parent.iterdir()) == []
    assert _patch(home).is_symlink()
    assert not PatchRevision.objects.exists()


def test_a_read_only_file_is_not_replaced(home: Path, staff: Client) -> None:
    path = _patch(home)
    os.chmod(path, 0o444)
    inode = path.stat().st_ino
    page = _save(staff)
    assert "read-only (mode 0444)" in page and "chmod u+w" in page
    assert path.read_text() == HAND_WRITTEN
    assert path.stat().st_ino == inode  # not replaced by a new file either
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert not PatchRevision.objects.exists()
    os.chmod(path, 0o644)  # writable again: the same form saves
    response = staff.post(URL, _form_data(staff, URL, quantumPercent=10))
    assert response.status_code == 302
    assert "quantumPercent: 10" in path.read_text()


def test_a_restore_into_a_read_only_file_is_refused(home: Path, staff: Client) -> None:
    response = staff.post(URL, _form_data(staff, URL, quantumPercent=10))
    assert response.status_code == 302
    (revision,) = PatchRevision.objects.all()
    saved = _patch(home).read_text()
    os.chmod(_patch(home), 0o444)
    response = staff.post(
        f"/settings/revisions/{revision.pk}/restore/", {"which": "before"}, follow=True
    )
    assert "Not restored:" in response.content.decode()
    assert "read-only (mode 0444)" in response.content.decode()
    assert _patch(home).read_text() == saved
    assert PatchRevision.objects.count() == 1
