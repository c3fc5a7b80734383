"""What every sub-command of the command line shares: exit codes, the one-line error path, the loader flags.

One place builds the loader's options from the flags (:func:`add_loader_flags`,
:func:`loader_options`), so a flag added there (a weight column, a deployment
file ...) reaches ``report``, ``check``, ``recalibrate``, ``apply`` and
``compare`` alike; and one place turns a :class:`CalibrationInputError` or an
``OSError`` into the one-line message and exit status 2 (:func:`run`).
"""
from __future__ import annotations

import argparse
import io
import math
import os
import stat
import sys
from collections.abc import Callable
from typing import NoReturn

from calib_core.io import load_predictions
from calib_core.io.columns import split_mask
from calib_core.io.formats import MAX_BYTES
from calib_core.metrics.registry import get_metric
from calib_core.metrics.reports import metrics_of_kind
from calib_core.validation import CalibrationInputError

#: Exit statuses. ``check`` uses all four; the other sub-commands 0 and 2.
EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_BAD_INPUT = 2
EXIT_INCONCLUSIVE = 3


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line, like every other bad input (no usage block), and exit status 2."""

    def error(self, message: str) -> NoReturn:
        commands = [action for action in self._actions if isinstance(action, argparse._SubParsersAction)]
        where = (f"sub-commands: {', '.join(commands[0].choices)}; `{self.prog} COMMAND --help` lists the options"
                 if commands else f"`{self.prog} --help` lists the options")
        self.exit(EXIT_BAD_INPUT, f"calib-core: error: {' '.join(message.split())} ({where})\n")


def add_loader_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that say how a predictions file is read (:func:`loader_options` turns them into keywords)."""
    parser.add_argument("--label-column", default=None, help="name of the label column (default: detected)")
    parser.add_argument("--input-kind", choices=("auto", "probabilities", "logits"), default="auto",
                        help="whether the class columns hold probabilities or logits (default: detected)")
    parser.add_argument("--class-names", default=None, metavar="A,B,...",
                        help="the class of each class column, in column order, separated by commas (accepts the "
                             "label-to-column mapping a refused file proposes; memory engine)")
    parser.add_argument("--renormalize", action="store_true",
                        help="divide each probability row by its sum instead of refusing rows not summing to 1")
    parser.add_argument("--percentages", action="store_true",
                        help="the values are percentages (rows sum to 100): divide them by 100")
    parser.add_argument("--kind", choices=("auto", "classes", "confidence"), default="auto",
                        help="confidence: a confidence file (a stated confidence and whether each answer was right, "
                             "e.g. question_id,confidence,correct); classes: never read as one; auto: by the column "
                             "names (default)")


def loader_options(args: argparse.Namespace) -> dict:
    """The keywords of :func:`calib_core.load_predictions` that the flags of :func:`add_loader_flags` set."""
    return dict(label_column=args.label_column, input_kind=args.input_kind, renormalize=args.renormalize,
                percentages=args.percentages, class_names=_class_names(args), kind=args.kind,
                **({"weight_column": args.weight_column} if getattr(args, "weight_column", None) else {}))


def load_file(path: str, args: argparse.Namespace, **extra):
    """One predictions file for the memory engine: its bytes read once (:func:`_read_input`), loaded with the
    flags' options and ``extra`` keywords (e.g. ``group=``); a folder or pattern goes to the loader as it is."""
    source = _read_input(path) if _pipe_kind(path) or os.path.isfile(path) else path
    return load_predictions(source, **loader_options(args), **extra)


def _class_names(args: argparse.Namespace) -> list[str] | None:
    """``--class-names a,b`` as the loader's ``class_names``."""
    if args.class_names is None:
        return None
    return [name.strip() for name in args.class_names.split(",")]


def _select_split(predictions, split: str, path: str, where: str = ""):
    """The rows of split ``split``, chosen by the engines' split filter (:func:`~calib_core.io.columns.split_mask`)."""
    if predictions.split is None:
        raise CalibrationInputError(f"--split {split!r} given but {path} has no split column.")
    mask = split_mask(predictions.split, split)
    if not mask.any():
        known = ", ".join(sorted(set(predictions.split.tolist())))
        raise CalibrationInputError(f"no rows with split {split!r}{where}; the file has: {known}.")
    return predictions.subset(mask)


def _read_input(path: str) -> io.BytesIO:
    """The bytes of one file for the memory engine, read once and bounded, named after the file.

    A regular file's size is checked before it is opened; a pipe, device or socket has no
    size and is read up to :data:`~calib_core.io.formats.MAX_BYTES` plus one byte (``report
    /dev/zero`` ends with this message, not a MemoryError). The loader parses these bytes,
    never the file itself, so a file rewritten while the report runs cannot change (or
    crash) the read, and the bytes an HTML report hashes are the bytes it loaded.
    """
    size = os.stat(path).st_size if os.path.isfile(path) else None
    if size is not None and size > MAX_BYTES:
        raise CalibrationInputError(_too_big_for_memory(path, f"{size:,} bytes"))
    with open(path, "rb") as handle:
        # A regular file: one read of the size found (one byte more tells a file that grew). Anything
        # else: chunks, so that memory grows with what arrives and stops at the limit.
        chunks = [handle.read(size + 1)] if size is not None else iter(lambda: handle.read(1 << 20), b"")
        parts, total = [], 0
        for chunk in chunks:
            total += len(chunk)
            if total > MAX_BYTES:
                raise CalibrationInputError(_too_big_for_memory(path, f"more than {MAX_BYTES:,} bytes"))
            parts.append(chunk)
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    buffer = io.BytesIO(data)
    buffer.name = os.path.basename(path)  # the loader's messages say "file 'NAME'"
    return buffer


def _too_big_for_memory(path: str, size: str) -> str:
    return (f"{path} is {size}, over the {MAX_BYTES:,}-byte limit of the memory engine (and of --html); "
            "evaluate it with --engine stream, whose memory is bounded at any size.")


def _pipe_kind(path: str) -> str | None:
    """``"pipe (FIFO)"``, ``"character device"`` or ``"socket"`` for such a path (e.g. from ``mkfifo`` or
    ``<(...)``), None for regular files, folders, patterns and paths that do not exist."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISFIFO(mode):
        return "pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return None




#: Command-line spelling of the loader keywords a refused file's fixes set (see calib_core.io.interpret.LoadFix).
_FIX_FLAGS = {("renormalize", True): "--renormalize", ("percentages", True): "--percentages",
              ("input_kind", "logits"): "--input-kind logits", ("input_kind", "probabilities"): "--input-kind probabilities"}


#: Python argument mentions in calib_core messages -> what does it on the command line.
_CLI_WORDS = (
    (r"`label_column=(-?\d+|'[^']*')?`", lambda m: "--label-column" + (f" {m.group(1).strip(chr(39))}" if m.group(1) else "")),
    (r"`class_names=[^`]*`", "--class-names A,B,..."),
    (r"`input_kind='(logits|probabilities)'`", r"--input-kind \1"),
    (r"`renormalize=True`", "--renormalize"),
    (r"`percentages=True`", "--percentages"),
    (r"`group=`", "--group-by"),
    (r"[Pp]ass `class_columns=`|[Pp]ass `score_column=(?:'[^']*')?`", "name the class columns p_<class>"),
    (r"`class_columns=`|`score_column=(?:'[^']*')?`", "class columns named p_<class>"),
)


def _fix_flag(item: tuple) -> str | None:
    """The command-line spelling of one ``(keyword, value)`` of a fix, or None when the command line has none."""
    key, value = item
    if key == "class_names":
        import shlex

        return "--class-names " + shlex.quote(",".join(str(v) for v in value))
    return _FIX_FLAGS.get(item)


def _cli_words(text: str) -> str:
    """A loader message with its Python arguments replaced by the command line's flags."""
    import re

    for pattern, replacement in _CLI_WORDS:
        text = re.sub(pattern, replacement, text)
    return text


def _error_text(exc: CalibrationInputError) -> str:
    """The message of ``exc`` in the command line's words.

    A file the loader refused with fixes (:class:`calib_core.io.interpret.PredictionsFileError`) is
    described without Python argument names, followed by the flags that apply each fix.
    """
    fixes = getattr(exc, "fixes", ())
    flags = [" ".join(_fix_flag(item) for item in fix.overrides) for fix in fixes
             if all(_fix_flag(item) for item in fix.overrides)]
    if not flags:
        return _cli_words(str(exc))
    return f"{exc.plain} To load it anyway: " + "; or ".join(flags) + "."


def json_number(value) -> float | None:
    """JSON has no NaN or infinity: a missing or infinite number is null (a reason beside it says why)."""
    return float(value) if value is not None and math.isfinite(value) else None


def fail(message: str) -> int:
    """Print ``message`` as the one-line error and return exit status 2."""
    print(f"calib-core: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_BAD_INPUT


def run(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run one sub-command; every error a user can cause ends here: one line on stderr, exit status 2."""
    try:
        return command(args)
    except CalibrationInputError as exc:
        return fail(_error_text(exc))
    except OSError as exc:
        where = exc.filename if exc.filename is not None else getattr(args, "path", "the input")
        return fail(f"cannot read {where}: {exc.strerror or exc}")


#: The metrics ``compare`` reports for a confidence model when none is asked for (the headline ECE first).
CONFIDENCE_COMPARE_KEYS = ("conf_ece", "conf_overconfidence", "conf_brier", "conf_nll", "conf_accuracy")


def check_metric_kind(key: str, predictions, where: str) -> None:
    """Refuse a metric of the other kind of model: a K-class metric on a confidence model would read
    ``max(c, 1 - c)`` (the two-class reading issue 26 found), and a confidence metric needs ``[1 - c, c]``."""
    spec = get_metric(key)
    kind = getattr(predictions, "kind", "classes")
    if spec.kind == kind:
        return
    own = ", ".join(s.key for s in metrics_of_kind(kind))
    model = "a confidence model (stated confidence and correctness)" if kind == "confidence" else "a K-class model"
    family = "confidence" if spec.kind == "confidence" else "K-class"
    raise CalibrationInputError(f"{where} {key!r} is a metric of {family} models, and this file is {model}; its "
                                f"metrics are: {own}.")
