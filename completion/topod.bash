# bash completion for topod(8)                             -*- shell-script -*-
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# topod has modes: the daemon (no mode option), --oneshot, --restore and
# --check [PATH…]; once one is on the line only the options it goes with
# are offered (topod refuses the others). Works with bash-completion's
# helpers when they are loaded, without them otherwise.

# The helpers __topod_init and __topod_files are topoctl's.
if ! declare -F __topod_init >/dev/null; then
    for __topod_f in "${BASH_SOURCE[0]%/*}/topoctl" "${BASH_SOURCE[0]%/*}/topoctl.bash"; do
        if [ -r "$__topod_f" ]; then
            . "$__topod_f"
            break
        fi
    done
    unset __topod_f
fi

_topod() {
    local cur prev words cword split
    __topod_init || return

    local with_arg=' --root --samples --config --policies --state-dir --log-level '
    local modes='--oneshot --restore --check'
    local -A mode_takes=(
        [daemon]='--root --state-dir --log-level --config --policies --oneshot --restore --check'
        [--oneshot]='--root --dry-run --json --samples --config --policies --state-dir'
        [--restore]='--root --state-dir --json'
        [--check]='--root --json --strict --offline --config --policies'
    )

    local i w mode=daemon
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if [ "$w" = = ]; then
            ((i++))
        elif [[ " $modes " == *" $w "* ]]; then
            mode=$w
        elif [[ $w == --* && $w != *=* && $with_arg == *" $w "* && ${words[i + 1]:-} != = ]]; then
            ((i++))
        fi
    done

    case $prev in
    --root | --state-dir)
        __topod_files -d "$cur"
        return ;;
    --config | --policies)
        __topod_files "$cur"
        return ;;
    --log-level)
        mapfile -t COMPREPLY < <(compgen -W 'err warning notice info debug' -- "$cur")
        return ;;
    --samples)
        return ;;
    esac

    if [[ $cur == -* ]]; then
        local opts="${mode_takes[$mode]} --help"
        # before any mode: every option (the mode follows from them)
        [ "$mode" = daemon ] && opts="${mode_takes[*]} --help --version"
        mapfile -t COMPREPLY < <(compgen -W "$(printf '%s\n' $opts | sort -u)" -- "$cur")
        return
    fi
    # --check takes the files to check
    [ "$mode" = --check ] && __topod_files "$cur"
}
complete -F _topod topod
