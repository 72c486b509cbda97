"""The alerts pages: a user's rules, edited in the browser, and what each fired.

Every user has their own rules (another user's rule is a 404). A rule's webhook secret is
shown once, right after it is made or replaced, and never again; the page keeps it in the
session for that one showing. Firings list their deliveries: the state, attempts, next
attempt and last error, as the watcher (:mod:`dshweb.alerts.watcher`) records them.
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Max, Prefetch
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from dshweb.alerts.forms import AlertRuleForm, new_secret, save_rule
from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule

RECENT_FIRINGS = 50
SHOWN_SECRET = "dshweb-alert-secret"


def _own_rule(request: HttpRequest, rule_id: int) -> AlertRule:
    try:
        return AlertRule.objects.get(pk=rule_id, owner_id=request.user.pk)
    except AlertRule.DoesNotExist:
        raise Http404(_("No such alert rule of yours.")) from None


def _secret_once(request: HttpRequest, rule: AlertRule) -> str | None:
    shown = request.session.get(SHOWN_SECRET)
    if isinstance(shown, list) and shown[:1] == [rule.pk]:
        del request.session[SHOWN_SECRET]
        return str(shown[1])
    return None


@require_safe
def alerts_index(request: HttpRequest) -> HttpResponse:
    rules = AlertRule.objects.filter(owner_id=request.user.pk).annotate(
        last_fired=Max("firings__fired_at")
    )
    firings = (
        AlertFiring.objects.filter(rule__owner_id=request.user.pk)
        .select_related("rule")
        .prefetch_related(Prefetch("deliveries", queryset=AlertDelivery.objects.order_by("id")))
        .order_by("-fired_at", "-id")[:RECENT_FIRINGS]
    )
    return render(request, "alerts/index.html", {"rules": rules, "firings": firings})


def _chosen(request: HttpRequest) -> dict[str, str]:
    """The values a GET of the form carries (a change of condition or scope, which shows
    that condition's fields): the form again, filled in as it was, nothing saved."""
    return {
        key: str(request.GET.get(key, ""))
        for key in request.GET
        if key in AlertRuleForm.base_fields
    }


@require_http_methods(["GET", "POST"])
def alert_new(request: HttpRequest) -> HttpResponse:
    form = AlertRuleForm(
        request.POST or None,
        instance=AlertRule(owner_id=int(request.user.pk or 0)),
        initial=_chosen(request),
    )
    form.instance.language = get_language()  # its alerts speak the page's language
    if request.method == "POST" and form.is_valid() and (rule := save_rule(form)) is not None:
        if rule.webhook_url:
            request.session[SHOWN_SECRET] = [rule.pk, rule.webhook_secret]
        messages.success(request, _("Alert rule “%(name)s” made.") % {"name": rule.name})
        return HttpResponseRedirect(reverse("dashboard:alert-rule", args=[rule.pk]))
    form.ask_fields_at(request.path)
    return render(request, "alerts/rule.html", {"form": form, "rule": None})


@require_http_methods(["GET", "POST"])
def alert_rule(request: HttpRequest, rule_id: int) -> HttpResponse:
    rule = _own_rule(request, rule_id)
    form = AlertRuleForm(request.POST or None, instance=rule, initial=_chosen(request))
    if request.method == "POST" and form.is_valid():
        form.instance.language = get_language()
        if save_rule(form) is not None:
            messages.success(request, _("Alert rule “%(name)s” saved.") % {"name": rule.name})
            return HttpResponseRedirect(request.path)
    form.ask_fields_at(request.path)
    context = {"form": form, "rule": rule, "secret": _secret_once(request, rule)}
    return render(request, "alerts/rule.html", context)


@require_POST
def alert_secret(request: HttpRequest, rule_id: int) -> HttpResponse:
    rule = _own_rule(request, rule_id)
    rule.webhook_secret = new_secret()
    rule.save(update_fields=["webhook_secret", "updated_at"])
    request.session[SHOWN_SECRET] = [rule.pk, rule.webhook_secret]
    messages.success(request, _("A new webhook secret: the old one no longer signs."))
    return HttpResponseRedirect(reverse("dashboard:alert-rule", args=[rule.pk]))


@require_POST
def alert_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    rule = _own_rule(request, rule_id)
    rule.delete()
    messages.success(
        request, _("Alert rule “%(name)s” deleted, with its firings.") % {"name": rule.name}
    )
    return HttpResponseRedirect(reverse("dashboard:alerts"))
