"""The sign-in forms (dshweb's and Django admin's), refusing a throttled username and
address before checking the password (:mod:`dshweb.accounts.throttle`)."""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.utils.translation import gettext_lazy, ngettext_lazy

from dshweb.accounts.throttle import login_cool_off_left, login_failed, login_succeeded

INVALID_LOGIN = gettext_lazy("That username and password do not match. Try again.")
THROTTLED = ngettext_lazy(
    "Too many failed sign-ins for this username from your address. "
    "Try again in %(minutes)s minute.",
    "Too many failed sign-ins for this username from your address. "
    "Try again in %(minutes)s minutes.",
    "minutes",
)
"""Both in the page's language (the sign-in page's errors are the form's)."""


class ThrottledAuthenticationForm(AuthenticationForm):
    # Django reads these class attributes (its own forms declare them the same way).
    error_messages = {  # noqa: RUF012
        **AuthenticationForm.error_messages,
        "invalid_login": INVALID_LOGIN,
        "throttled": THROTTLED,
    }
    cool_off_left = 0
    """Seconds the form was refused for (0 when it was not)."""

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if not username or not self.cleaned_data.get("password"):
            return super().clean()
        address = str(self.request.META.get("REMOTE_ADDR", "")) if self.request else ""
        self.cool_off_left = login_cool_off_left(username=username, address=address)
        if self.cool_off_left:
            raise forms.ValidationError(
                self.error_messages["throttled"],
                code="throttled",
                params={"minutes": math.ceil(self.cool_off_left / 60)},
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError as error:
            if error.code == "invalid_login":
                login_failed(username=username, address=address)
            raise
        login_succeeded(username=username, address=address)
        return cleaned


class ThrottledAdminAuthenticationForm(ThrottledAuthenticationForm, AdminAuthenticationForm):
    error_messages = {**AdminAuthenticationForm.error_messages, "throttled": THROTTLED}  # noqa: RUF012
