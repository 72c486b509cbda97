"""The user's API tokens page: make one (shown once, in the answer to the POST that made
it), see when each was last used, revoke one. Every change is a POST with the CSRF token;
another user's token is a 404."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from dshweb.accounts.models import ApiToken
from dshweb.accounts.tokens import token_create

PARKED_TOKEN = "dshweb-api-token"
"""Where an earlier dshweb parked a new token in the session until its page was loaded:
dropped, unshown, when the page is (a token is never kept in the session now)."""


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text=gettext_lazy("What it is for: a notebook, a script.")
    )


@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    """The page; a valid POST makes a token and answers with the page showing it, this
    once: it is in that answer alone (never kept in the session for a later page), which
    no cache may keep. An invalid POST answers with the form's errors."""
    form = TokenForm(request.POST or None)
    new = None
    if request.method == "POST" and form.is_valid() and request.user.is_authenticated:
        _, new = token_create(user=request.user, name=form.cleaned_data["name"])
        form = TokenForm()
    if PARKED_TOKEN in request.session:
        del request.session[PARKED_TOKEN]
    tokens = ApiToken.objects.filter(user_id=int(request.user.pk or 0))
    response = render(
        request, "account/api_tokens.html", {"form": form, "tokens": tokens, "new": new}
    )
    if new is not None:
        add_never_cache_headers(response)  # no-cache, no-store, must-revalidate, private
        response["Pragma"] = "no-cache"  # and an HTTP/1.0 cache
    return response


@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    updated = ApiToken.objects.filter(
        pk=token_id, user_id=int(request.user.pk or 0), revoked_at=None
    )
    if not updated.update(revoked_at=timezone.now()):
        raise Http404(_("No such token of yours (or it is revoked already)."))
    messages.success(request, _("Token revoked: it no longer opens the API."))
    return HttpResponseRedirect(reverse("dashboard:api-tokens"))
