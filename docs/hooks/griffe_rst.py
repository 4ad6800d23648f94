"""A griffe extension for the API pages: the docstrings are written for both ``help()``
and the site, with a few reStructuredText habits (``:class:`~a.B```, a literal block
introduced by ``::``). This turns those into Markdown code spans and a plain colon, so
the API reference reads cleanly; nothing else in a docstring changes."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|mod|data|meth|attr|obj|exc):`~?([^`]+)`")
_LITERAL = re.compile(r"(\S)::\n(\s*\n)")


def _role(match: re.Match[str]) -> str:
    """``:class:`~pkg.mod.Name``` -> ```Name```; ``:func:`pkg.f``` -> ```pkg.f```."""
    whole = match.group(0)
    target = match.group(1)
    if "`~" in whole:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def markdown(text: str) -> str:
    """A docstring's reStructuredText roles and ``::`` as Markdown.

    Examples:
        >>> markdown("a :class:`~fedbandit_env.network.Network` and :func:`make`::\\n\\n")
        'a `Network` and `make`:\\n\\n'
    """
    return _LITERAL.sub(r"\1:\n\2", _ROLE.sub(_role, text))


class RstRoles(griffe.Extension):
    """Rewrites each object's docstring once, as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Called by griffe for every object (modules, classes, functions, attributes)."""
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
