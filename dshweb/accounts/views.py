"""The sign-in page: Django's ``LoginView`` with the throttled form; a throttled attempt
is answered 429 with ``Retry-After``."""

from __future__ import annotations

from django.contrib.auth.views import LoginView
from django.http import HttpResponse

from dshweb.accounts.forms import ThrottledAuthenticationForm


class ThrottledLoginView(LoginView):
    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form: ThrottledAuthenticationForm) -> HttpResponse:  # type: ignore[override]
        response = super().form_invalid(form)
        if form.cool_off_left:
            response.status_code = 429
            response["Retry-After"] = str(form.cool_off_left)
        return response
