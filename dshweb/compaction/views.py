"""Settings → Engine: how the Compact button reaches ``dsh web``; the launch URL holds its
token, so it is stored and never shown back."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from dshweb.collect.settings_access import staff_only
from dshweb.compaction import which_dsh_web
from dshweb.compaction.models import DshWebSetting
from dshweb.dsh_web.client import DshWebClient, LaunchUrlError
from dshweb.words import said


class DshWebForm(forms.Form):
    mode = forms.ChoiceField(choices=DshWebSetting.Mode.choices, widget=forms.RadioSelect)
    launch_url = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=gettext_lazy(
            "Printed by `dsh web`: http://127.0.0.1:<port>/?token=… "
            "Leave empty to keep the one stored."
        ),
    )

    def clean_launch_url(self) -> str:
        url = str(self.cleaned_data.get("launch_url") or "").strip()
        if url:
            try:
                DshWebClient(url, timeout=1.0)
            except LaunchUrlError as problem:
                raise forms.ValidationError(said(str(problem))) from problem
        return url


@staff_only
@require_http_methods(["GET", "POST"])
def settings_dsh_web(request: HttpRequest) -> HttpResponse:
    """How the Compact button reaches ``dsh web``; the token is never shown back."""
    row = DshWebSetting.objects.first() or DshWebSetting()
    check = None
    if request.method == "POST":
        form = DshWebForm(request.POST)
        if form.is_valid():
            row.mode = form.cleaned_data["mode"]
            if form.cleaned_data["launch_url"]:
                row.launch_url = form.cleaned_data["launch_url"]
            row.updated_by = request.user if isinstance(request.user, User) else None
            row.save()
            if "test" in request.POST:
                check = which_dsh_web.test_connection()
            else:
                messages.success(request, _("Saved how dshweb reaches the DSH engine."))
                return HttpResponseRedirect(request.path)
    else:
        form = DshWebForm(initial={"mode": row.mode})
    return render(
        request,
        "settings/dsh_web.html",
        {
            "form": form,
            "row": row,
            "has_url": bool(row.launch_url),
            "check": check,
            "environment": which_dsh_web.dsh_web_from_environment(),
            "demo_compacts": which_dsh_web.demo_compacts(),
        },
    )
