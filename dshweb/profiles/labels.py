"""How the settings form shows each plugin's keys to a person (its help may hold
``<code>``: our own words, shown as HTML): grouped by what they change,
each with a label in plain words, its unit, and a short help, translated. The key itself is
shown small beside the label; the values a form saves are the plugin's own (a fraction stays
a fraction, a percent a percent: the unit says which).

The schemas (:mod:`dshweb.core.profile.plugins`) stay the one rule on what each key takes;
this is only its presentation.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from dshweb.core.profile.schema import Problem


@dataclass(frozen=True, slots=True)
class Shown:
    label: Promise
    help: Promise
    unit: Promise | None = None


FRACTION_OF_POINT = _("fraction of the compaction point, 0–1")
FRACTION_OF_WINDOW = _("fraction of the window, 0–1")
PERCENT_OF_WINDOW = _("percent of the window")
FRACTION = _("fraction, 0–1")
TOKENS = _("tokens")
CHARACTERS = _("characters")
STEPS = _("steps")

LABELS: dict[str, dict[str, Shown]] = {
    "context-truth": {
        "enabled": Shown(
            _("Tell the model its occupancy"), _("The line in every step's runtime context.")
        ),
        "language": Shown(
            _("Language of the line"), _("<code>en</code>: English; <code>zh</code>: Chinese.")
        ),
        "order": Shown(
            _("Place in the runtime context"), _("Lower comes first (the sandbox note is 110).")
        ),
        "quantumPercent": Shown(
            _("Step of the figures"),
            _("The line's figures move in steps of this size; a new step re-sends the line."),
            PERCENT_OF_WINDOW,
        ),
        "showAutoCompactionPoint": Shown(
            _("Name the compaction point"),
            _("Say where automatic compaction happens, and how far it is."),
        ),
        "moderateAt": Shown(
            _("Moderate from"), _("Where the moderate band starts."), FRACTION_OF_POINT
        ),
        "tightAt": Shown(_("Tight from"), _("Where the tight band starts."), FRACTION_OF_POINT),
        "hysteresis": Shown(
            _("Margin to go down a band"),
            _("How far below an edge the reading must fall before the band drops."),
            FRACTION_OF_POINT,
        ),
        "tightAdvice": Shown(
            _("Advice in the tight band"),
            _(
                "<code>none</code>: no advice; <code>inform</code>: say what a fold costs; "
                "<code>stop</code>: tell the model to wrap up."
            ),
        ),
        "thresholdRatio": Shown(
            _("Compaction at (mirror)"),
            _("The engine's thresholdRatio, for the line: keep it equal to the engine's."),
            FRACTION_OF_WINDOW,
        ),
        "headroomTokens": Shown(
            _("Headroom (mirror)"),
            _("The engine's headroomTokens, for the line: keep it equal."),
            TOKENS,
        ),
        "reservedCompletionTokens": Shown(
            _("Reserved for the answer"),
            _("Empty: the routed request's own maxTokens, as the engine reads it."),
            TOKENS,
        ),
        "paceEstimate": Shown(
            _("Say how many steps are left"),
            _("In the tight and critical bands, at this session's pace."),
        ),
        "paceSamples": Shown(
            _("Steps the pace is taken over"),
            _("The median of this many recent steps."),
            STEPS,
        ),
        "paceMinSamples": Shown(
            _("Steps before a pace is said"),
            _("No estimate until this many steps were seen."),
            STEPS,
        ),
        "paceMargin": Shown(
            _("Margin of the pace estimate"),
            _("How far a longer estimate must be clear before the line promises it."),
            FRACTION,
        ),
        "authoritative": Shown(
            _("Say the line is the only authority"), _("The model should not estimate on its own.")
        ),
        "staleClaimClause": Shown(
            _("Retire old 'nearly full' claims"),
            _("In the calm band, say earlier such claims are out of date."),
        ),
        "foldClause": Shown(_("Explain what a fold is"), _("In the tight and critical bands.")),
        "freeClause": Shown(
            _("Say how much of the window is free"), _("The part of the window not used yet.")
        ),
        "logBandChanges": Shown(_("Log band changes"), _("One log line per change of band.")),
        "patchCompactionPrompt": Shown(
            _("Add rules to the summary prompt"),
            _("The rules below go into the compaction directive."),
        ),
        "compactionRules": Shown(
            _("Rules for the summary"), _("One rule per line; none at all turns this off.")
        ),
        "foldAtIdle": Shown(
            _("Fold while idle"), _("Compact when the agent is idle and close to the point.")
        ),
        "foldAtIdleMarginPercent": Shown(
            _("Idle fold margin"),
            _("Fold once the headroom is within this much of the window."),
            PERCENT_OF_WINDOW,
        ),
        "foldAtIdleMethod": Shown(
            _("Idle fold through"),
            _(
                "<code>auto</code>: the session's own <code>/compact</code> first; "
                "<code>command</code> or <code>service</code>: only that."
            ),
        ),
        "foldAtIdleCooldownMs": Shown(
            _("Wait between idle folds"),
            _("So a failing fold is not tried again at once."),
            _("milliseconds"),
        ),
    },
    "compaction-basic": {
        "auto": Shown(
            _("Compact automatically"), _("Before a step that would cross the compaction point.")
        ),
        "thresholdRatio": Shown(
            _("Compaction at"),
            _("The compaction point, as a share of the window."),
            FRACTION_OF_WINDOW,
        ),
        "headroomTokens": Shown(
            _("Headroom"),
            _("Kept free below the window, after what is reserved for the answer."),
            TOKENS,
        ),
        "retainRatio": Shown(
            _("Kept after a fold (share)"),
            _("The newest part of the messages a fold leaves as it is."),
            FRACTION,
        ),
        "retainTokens": Shown(
            _("Kept after a fold (tokens)"),
            _("Instead of the share: this many of the newest tokens."),
            TOKENS,
        ),
        "maxTokens": Shown(
            _("Longest summary"), _("The summary call's output limit; empty: the headroom."), TOKENS
        ),
        "summarizationProvider": Shown(
            _("Summary provider"), _("Empty: the session's own (set with the model).")
        ),
        "summarizationModel": Shown(
            _("Summary model"), _("Empty: the session's own (set with the provider).")
        ),
        "compactionRetries": Shown(
            _("Retries of a failed summary"), _("How often a failed summary call is tried again.")
        ),
        "maxOverflowRetries": Shown(
            _("Retries after an overflow"), _("When the provider says the request is too large.")
        ),
    },
    "tool-result-pruner": {
        "thresholdChars": Shown(
            _("Cut results longer than"), _("A tool result past this length is cut."), CHARACTERS
        ),
        "headChars": Shown(
            _("Keep from the start"), _("What a cut result keeps of its beginning."), CHARACTERS
        ),
        "tailChars": Shown(
            _("Keep from the end"), _("What a cut result keeps of its end."), CHARACTERS
        ),
    },
}

GROUPS: dict[str, tuple[tuple[Promise, tuple[str, ...]], ...]] = {
    "context-truth": (
        (
            _("The line the model reads"),
            ("enabled", "language", "order", "quantumPercent", "showAutoCompactionPoint"),
        ),
        (_("Bands"), ("moderateAt", "tightAt", "hysteresis", "tightAdvice")),
        (
            _("The compaction point, as the line names it"),
            ("thresholdRatio", "headroomTokens", "reservedCompletionTokens"),
        ),
        (_("Steps left"), ("paceEstimate", "paceSamples", "paceMinSamples", "paceMargin")),
        (
            _("Wording"),
            ("authoritative", "staleClaimClause", "foldClause", "freeClause", "logBandChanges"),
        ),
        (_("The summary of a fold"), ("patchCompactionPrompt", "compactionRules")),
        (
            _("Folding while idle"),
            ("foldAtIdle", "foldAtIdleMarginPercent", "foldAtIdleMethod", "foldAtIdleCooldownMs"),
        ),
    ),
    "compaction-basic": (
        (_("When it folds"), ("auto", "thresholdRatio", "headroomTokens")),
        (_("What a fold keeps"), ("retainRatio", "retainTokens")),
        (
            _("The summary call"),
            (
                "maxTokens",
                "summarizationProvider",
                "summarizationModel",
                "compactionRetries",
                "maxOverflowRetries",
            ),
        ),
    ),
    "tool-result-pruner": (
        (
            _("Which tool results are cut, and what stays"),
            ("thresholdChars", "headChars", "tailChars"),
        ),
    ),
}
OTHER = _("Other settings")

PROBLEMS: dict[str, Promise] = {
    "unset": _("must be set (leave the key out to use the default)"),
    "bool": _("must be true or false"),
    "text": _("must be a non-empty text"),
    "text-long": _("must be at most %(limit)s characters"),
    "choice": _("must be one of %(choices)s"),
    "texts": _("must be a list of texts"),
    "texts-empty": _("every entry must be a non-empty text"),
    "texts-long": _("must be at most %(limit)s characters in all"),
    "safe": _("must be between -%(limit)s and %(limit)s"),
    "number": _("must be a number"),
    "whole": _("must be a whole number"),
    "range-gt-lt": _("must be between %(low)s and %(high)s, exclusive"),
    "range-gt-le": _("must be above %(low)s and at most %(high)s"),
    "range-ge-lt": _("must be at least %(low)s and below %(high)s"),
    "range-ge-le": _("must be between %(low)s and %(high)s"),
    "int-gt": _("must be a whole number greater than %(low)s"),
    "int-ge": _("must be a whole number of at least %(low)s"),
    "int-le": _("must be a whole number of at most %(high)s"),
    "number-gt": _("must be a number greater than %(low)s"),
    "number-ge": _("must be a number of at least %(low)s"),
    "number-le": _("must be a number of at most %(high)s"),
    "edges": _("moderateAt must be below tightAt."),
    "pace-samples": _(
        "paceMinSamples must not exceed paceSamples, or the pace estimate never shows."
    ),
    "retain-one-way": _("Set retainRatio or retainTokens, not both."),
    "summarizer-pair": _(
        "summarizationProvider and summarizationModel go together: set both or neither."
    ),
    "pruned-fits": _(
        "headChars + tailChars + the %(marker)s-character marker is %(kept)s, more than "
        "thresholdChars (%(limit)s): a pruned result would not be smaller."
    ),
}
"""The core schema's problems (:class:`~dshweb.core.profile.schema.Problem`) in words a
person reads in their language."""


def problem_text(message: str) -> str:
    """A schema's message in the active language (as it is when its sentence is unknown)."""
    if not isinstance(message, Problem):
        return message
    if message.said == "several":
        several = dict(message.figures)["problems"]
        assert isinstance(several, tuple)
        return " ".join(problem_text(problem) for problem in several)
    sentence = PROBLEMS.get(message.said)
    return message if sentence is None else str(sentence) % dict(message.figures)
