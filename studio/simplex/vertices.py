"""The vertices of the triangle: three classes, or three groups of classes whose probabilities are added up."""
from __future__ import annotations

import streamlit as st

from calib_core import default_groups
from studio import compute_simplex as cs
from studio import layout

MODES = {"groups": "three groups of classes", "classes": "three classes"}
VERTEX_LETTERS = "ABC"
#: The two-outcome lenses (max, marginal) on the edge between the first two vertices.
TWO_OUTCOMES = cs.Vertices("groups", ((0,), (1,), ()))


def class_label(names: tuple[str, ...], k: int) -> str:
    return str(k) if names[k] == str(k) else f"{k}: {names[k]}"


def plural(items: list[int], names: tuple[str, ...]) -> str:
    shown = ", ".join(class_label(names, k) for k in items)
    return f"class {shown} is" if len(items) == 1 else f"classes {shown} are"


def _reset_for(n_classes: int) -> None:
    """Start the vertex pickers from their defaults when the number of classes changes.

    The pickers' values belong to one number of classes: another model with
    another K starts from its defaults (set, not deleted: a deleted bound
    widget would be seeded again from the opening link).
    """
    if st.session_state.get("studio:simplex_classes") != n_classes:
        if "studio:simplex_classes" in st.session_state:
            for j, group in enumerate(default_groups(n_classes)):
                st.session_state[f"group_{VERTEX_LETTERS[j].lower()}"] = list(group)
                st.session_state[f"vertex_{VERTEX_LETTERS[j].lower()}"] = min(j, n_classes - 1)
        st.session_state["studio:simplex_classes"] = n_classes


def _check(mode: str, members: tuple, class_names: tuple[str, ...]) -> None:
    """Stop the page with a message when the groups or classes picked cannot make a triangle."""
    n_classes = len(class_names)
    if mode == "groups":
        repeated, missing = cs.group_problems(members, n_classes)
        problems = []
        if repeated:
            problems.append(f"{plural(repeated, class_names)} in more than one group: remove "
                            f"{'it' if len(repeated) == 1 else 'them'} from all groups but one")
        if missing:
            problems.append(f"{plural(missing, class_names)} in no group: add "
                            f"{'it' if len(missing) == 1 else 'each'} to one of the three groups")
        if problems:
            st.error("Every class must be in exactly one group. " + "; ".join(problems) + ".",
                     icon=":material/error:")
            st.stop()
        if sum(1 for g in members if g) < 2:
            st.error("Put classes into at least two groups: with one group every prediction sits on its vertex "
                     "and there is nothing to see.", icon=":material/error:")
            st.stop()
    elif len(set(members)) < 3:
        twice = sorted({k for k in members if members.count(k) > 1})
        st.error(f"Choose three different classes: {plural(twice, class_names)} picked more than once. "
                 "Change one of the vertex pickers.", icon=":material/error:")
        st.stop()


def pick_vertices(class_names: tuple[str, ...], lens: str, lens_label: str) -> cs.Vertices:
    """The mode and vertex pickers; the vertices of the canonical lens, else :data:`TWO_OUTCOMES`."""
    n_classes = len(class_names)
    all_classes = list(range(n_classes))
    canonical = lens == "canonical"
    mode_options = list(MODES) if n_classes >= 3 else ["groups"]
    _reset_for(n_classes)
    mode = layout.linked(
        st.radio, "Vertices of the triangle", mode_options, format_func=MODES.get, horizontal=True,
        index=0, key="vertices", options=mode_options, disabled=not canonical or n_classes < 3,
        help="Groups: the probabilities of each group's classes are added up (every class in exactly one group). "
             "Three classes: only the rows whose label is one of them, with the three probabilities rescaled to "
             "sum to 1.")
    picker_cols = st.columns(3)

    def label(k: int) -> str:
        return class_label(class_names, k)

    if mode == "groups":
        suggested = default_groups(n_classes)
        groups = []
        for j, column in enumerate(picker_cols):
            picked = layout.linked(
                column.multiselect, f"Vertex {VERTEX_LETTERS[j]}: classes added up", all_classes, format_func=label,
                default=list(suggested[j]), key=f"group_{VERTEX_LETTERS[j].lower()}", options=all_classes,
                disabled=not canonical, placeholder="no class")
            groups.append(tuple(sorted(int(k) for k in picked)))
        members = tuple(groups)
    else:
        members = tuple(int(layout.linked(
            column.selectbox, f"Vertex {VERTEX_LETTERS[j]}", all_classes, format_func=label, index=j,
            key=f"vertex_{VERTEX_LETTERS[j].lower()}", options=all_classes, disabled=not canonical))
            for j, column in enumerate(picker_cols))
    if n_classes == 2 and canonical:
        st.caption("A binary model: its predictions lie on the edge between the two classes.")
    if not canonical:
        st.caption(f"The {lens_label} lens asks a yes/no question, so its predictions lie on the edge between "
                   "the first two vertices; the vertex choice above applies to the canonical lens.")
        return TWO_OUTCOMES
    _check(mode, members, class_names)
    return cs.Vertices(mode, members)
