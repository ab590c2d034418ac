"""The completion scripts themselves: bash, zsh and fish, from the commands ``completion`` reads.

Every word written here has passed ``completion._SAFE`` (letters, digits and ``._/+@-``) and
every description is quoted for its shell, so nothing from a table can change what a script does.
"""

from __future__ import annotations

from collections import defaultdict

from .. import __version__

TYPE_CHECKING = False  # not typing.TYPE_CHECKING, as the rest of the package
if TYPE_CHECKING:
    from ..completion import Command, Option

HEADER = "# {shell} completion for paramcount {version}, written by `paramcount completion {shell}`\n"


def _head(shell: str) -> str:
    return HEADER.format(shell=shell, version=__version__)


def short(text: str, limit: int = 72) -> str:
    """The first clause of a help text, on one line, at most ``limit`` characters."""
    first = " ".join(text.split()).split("; ")[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


# ---- bash ---------------------------------------------------------------------------------------


def _bash_values(commands: tuple[Command, ...]) -> str:
    """One ``case`` arm per set of values: ``memory:--gpu|fit:--gpu) ... ;;``."""
    arms: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for c in commands:
        for o in (o for o in c.options if o.takes):
            kind = "files" if o.files else "words" if o.words else "none"
            arms[kind, o.words] += [f"{c.name}:{s}" for s in o.strings]
    reply = {
        "files": 'COMPREPLY=($(compgen -f -- "$cur")); return ;;',
        # a value of no fixed set (a number, a size) is typed: not even file names are offered
        "none": "compopt +o default 2>/dev/null; return ;;",
    }
    lines = []
    for (kind, words), keys in arms.items():
        act = reply.get(kind) or f'COMPREPLY=($(compgen -W "{" ".join(words)}" -- "$cur")); return ;;'
        lines.append(f"        {'|'.join(keys)})\n            {act}")
    return "\n".join(lines)


def _bash_flags(commands: tuple[Command, ...]) -> str:
    arms = []
    for c in commands:
        flags = " ".join(s for o in c.options for s in o.strings)
        arms.append(f'            {c.name}) COMPREPLY=($(compgen -W "{flags}" -- "$cur")) ;;')
    return "\n".join(arms)


def _bash_words(commands: tuple[Command, ...]) -> str:
    """The commands whose positional argument is one of a fixed set (``completion bash``)."""
    arm = '        {}) COMPREPLY=($(compgen -W "{}" -- "$cur")) ;;'
    return "\n".join(arm.format(c.name, " ".join(c.words)) for c in commands if c.words)


def bash(commands: tuple[Command, ...], models: tuple[str, ...]) -> str:
    names = [c.name for c in commands if c.name != "count"]
    with_models = "|".join(c.name for c in commands if c.models and c.name != "count")
    return (
        _head("bash")
        + f"""\
_paramcount_models='{" ".join(models)}'
_paramcount_commands='{" ".join(names)}'

_paramcount() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} cmd=count
    if ((COMP_CWORD > 1)); then
        case ${{COMP_WORDS[1]}} in
            {"|".join(names)}) cmd=${{COMP_WORDS[1]}} ;;
        esac
    fi
    # --gpu=h1: bash splits at the '=', so the flag is a word further back
    [[ $cur == "=" ]] && cur=
    [[ $prev == "=" ]] && ((COMP_CWORD > 1)) && prev=${{COMP_WORDS[COMP_CWORD-2]}}
    case $cmd:$prev in
{_bash_values(commands)}
    esac
    if [[ $cur == -* ]]; then
        case $cmd in
{_bash_flags(commands)}
        esac
        return
    fi
    case $cmd in
        count)
            local first=
            ((COMP_CWORD == 1)) && first=$_paramcount_commands
            COMPREPLY=($(compgen -W "$first $_paramcount_models" -- "$cur")) ;;
        {with_models})
            COMPREPLY=($(compgen -W "$_paramcount_models" -- "$cur")) ;;
{_bash_words(commands)}
    esac
}}
# -o default: where no word fits (a path to a config or a checkpoint), the file names
complete -o default -F _paramcount paramcount
"""
    )


# ---- zsh ----------------------------------------------------------------------------------------


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _zsh_spec(string: str, o: Option) -> str:
    """One _arguments spec: ``--gpu[say whether it fits]:NAME:(rtx3060 …)``."""
    said = short(o.help).replace("[", "(").replace("]", ")").replace("\\", "")
    spec = f"{'*' if o.repeat else ''}{string}[{said}]"
    if o.takes:
        action = "_files" if o.files else f"({' '.join(o.words)})" if o.words else " "
        spec += f":{o.metavar}:{action}"
    return _zsh_quote(spec)


def _zsh_arm(c: Command) -> str:
    specs = [_zsh_spec(s, o) for o in c.options for s in o.strings]
    if c.name == "count":
        specs.append("'1: :_paramcount_first'")
    elif c.models:
        specs.append("'*: :_paramcount_model'")
    elif c.words:
        specs.append(_zsh_quote(f"1: :({' '.join(c.words)})"))
    body = " \\\n                ".join(specs)
    return f"        {c.name})\n            _arguments -S : \\\n                {body} ;;"


def zsh(commands: tuple[Command, ...], models: tuple[str, ...]) -> str:
    names = [c.name for c in commands if c.name != "count"]
    arms = "\n".join(_zsh_arm(c) for c in commands)
    return (
        "#compdef paramcount\n"
        + _head("zsh")
        + f"""\
_paramcount_models=({" ".join(models)})
_paramcount_commands=({" ".join(names)})

_paramcount_model() {{
    _alternative 'models:catalog model:compadd -a _paramcount_models' 'files:file:_files'
}}

_paramcount_first() {{
    _alternative 'commands:command:compadd -a _paramcount_commands' \\
        'models:catalog model:compadd -a _paramcount_models' 'files:file:_files'
}}

_paramcount() {{
    local cmd=count
    if ((CURRENT > 2)) && ((${{_paramcount_commands[(Ie)${{words[2]}}]}})); then
        cmd=${{words[2]}}
        shift words
        ((CURRENT--))
    fi
    case $cmd in
{arms}
    esac
}}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _paramcount "$@"  # autoloaded from $fpath
else
    compdef _paramcount paramcount  # sourced
fi
"""
    )


# ---- fish ---------------------------------------------------------------------------------------


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_option(condition: str, string: str, o: Option) -> str:
    if string.startswith("--"):
        name = f"-l {string[2:]}"
    else:  # -np, -fa, llama.cpp's -c: fish's old-style single-dash options (llama.cpp's parser groups
        # no short flags, and a short -c would make fish read -ctk as -c -t -k); -h: a short one
        name = f"-s {string[1:]}" if string == "-h" else f"-o {string[1:]}"
    line = f"complete -c paramcount -n {condition} {name}"
    if o.takes:
        line += " -r" if o.files else f" -x -a {_fish_quote(' '.join(o.words))}" if o.words else " -x"
    return f"{line} -d {_fish_quote(short(o.help))}" if o.help else line


def fish(commands: tuple[Command, ...], models: tuple[str, ...]) -> str:
    names = " ".join(c.name for c in commands if c.name != "count")
    lines = [_head("fish").rstrip("\n"), f"set -l models {' '.join(models)}"]
    for c in (c for c in commands if c.name != "count"):
        said = _fish_quote(short(c.help))
        lines.append(f"complete -c paramcount -n __fish_use_subcommand -a {c.name} -d {said}")
    for c in commands:
        if c.name == "count":
            condition = _fish_quote(f"not __fish_seen_subcommand_from {names}")
        else:
            condition = _fish_quote(f"__fish_seen_subcommand_from {c.name}")
        if c.models:
            lines.append(f'complete -c paramcount -n {condition} -a "$models" -d "catalog model"')
        if c.words:
            lines.append(f"complete -c paramcount -n {condition} -f -a {_fish_quote(' '.join(c.words))}")
        lines += [_fish_option(condition, s, o) for o in c.options for s in o.strings]
    return "\n".join(lines) + "\n"
