# bash completion for topoctl(8)                           -*- shell-script -*-
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Verbs, and after a verb only the options that verb takes (topoctl refuses
# the others); values: PIDs for explain and --pid, files for check, --xml,
# --caps, --config and --policies, directories for --root and --state-dir.
# Works with bash-completion's helpers when they are loaded, without them
# otherwise.

# The PIDs in /proc, for explain PID and --pid.
__topod_pids() {
    local p
    for p in /proc/[0-9]*; do
        printf '%s\n' "${p#/proc/}"
    done
}

# COMPREPLY: files (or with -d directories) matching $1.
__topod_files() {
    local d=
    [ "$1" = -d ] && { d=-d; shift; }
    if declare -F _filedir >/dev/null; then
        _filedir $d
    else
        compopt -o filenames 2>/dev/null
        if [ -n "$d" ]; then
            mapfile -t COMPREPLY < <(compgen -d -- "$1")
        else
            mapfile -t COMPREPLY < <(compgen -f -- "$1")
        fi
    fi
}

# cur, prev, words, cword as bash-completion's _init_completion -s sets
# them: "--opt=value" (split at '=' by COMP_WORDBREAKS) gives prev=--opt.
__topod_init() {
    if declare -F _init_completion >/dev/null; then
        _init_completion -s
        return
    fi
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${words[cword]}
    prev=${words[cword - 1]:-}
    if [ "$cur" = = ]; then
        cur=
    elif [ "$prev" = = ] && [ "$cword" -ge 2 ]; then
        prev=${words[cword - 2]}
    fi
    return 0
}

_topoctl() {
    local cur prev words cword split
    __topod_init || return

    local global='--help --version'
    local daemon='--json --root --state-dir'
    local rules='--config --policies --samples'
    local -A takes=(
        [explain]="$daemon"
        [status]="$daemon"
        [reload]="$daemon"
        [topology]='--json --root --xml --synthetic'
        [check]='--json --root --strict --offline --xml --synthetic --caps'
        [classify]="--json --root $rules --interval --pid --all --events"
        [plan]="$daemon $rules --check --xml --synthetic --caps"
        [reset]="$daemon"
        [metrics]="$daemon"
    )
    local with_arg=' --root --xml --synthetic --caps --samples --interval --pid --config --policies --state-dir '

    # The verb, and the words after it, skipping options and their values.
    local i w verb= nargs=0
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if [ "$w" = = ]; then
            ((i++))
        elif [[ $w == --* ]]; then
            [[ $w != *=* && $with_arg == *" $w "* && ${words[i + 1]:-} != = ]] && ((i++))
        elif [[ $w == -* ]]; then
            :
        elif [ -z "$verb" ]; then
            verb=$w
        else
            ((nargs++))
        fi
    done

    case $prev in
    --root | --state-dir)
        __topod_files -d "$cur"
        return ;;
    --xml | --caps | --config | --policies)
        __topod_files "$cur"
        return ;;
    --pid)
        mapfile -t COMPREPLY < <(compgen -W "$(__topod_pids)" -- "$cur")
        return ;;
    --interval)
        mapfile -t COMPREPLY < <(compgen -W '100ms 500ms 1s 2s 5s' -- "$cur")
        return ;;
    --samples | --synthetic)
        return ;;
    esac

    if [[ $cur == -* ]]; then
        local opts
        if [ -n "$verb" ]; then
            opts="${takes[$verb]:-} --help"
        else
            opts="$global ${takes[*]}"
        fi
        mapfile -t COMPREPLY < <(compgen -W "$(printf '%s\n' $opts | sort -u)" -- "$cur")
        return
    fi

    case $verb in
    '')
        mapfile -t COMPREPLY < <(compgen -W "${!takes[*]}" -- "$cur") ;;
    explain)
        [ "$nargs" -eq 0 ] && mapfile -t COMPREPLY < <(compgen -W "$(__topod_pids)" -- "$cur") ;;
    check)
        __topod_files "$cur" ;;
    esac
}
complete -F _topoctl topoctl
