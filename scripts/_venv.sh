# shellcheck shell=bash
# Sourced by scripts/start and scripts/test: make sure .venv exists and holds what
# pyproject.toml asks for, then put it first on PATH. Silent when nothing changed.
#
# `source scripts/_venv.sh` installs dshweb alone (what the dashboard needs);
# `source scripts/_venv.sh EXTRA[,EXTRA…]` adds extras of pyproject.toml (`engine`: the DSH
# runtime, for Compact; `team`: PostgreSQL and Redis; `dev`: the test toolchain and every
# other). The install is redone only when pyproject.toml's hash differs from the one .venv
# recorded after its last successful install, or that install lacked one of the extras
# (`dev` holds every other). DSHWEB_PYTHON picks the interpreter used to create the venv
# (default: python3, which must be 3.11 or newer).

_dshweb_venv_setup() {
    local extra="${1:-}" root venv python stamp want have had
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    venv="$root/.venv"
    stamp="$venv/.dshweb-installed"
    python="${DSHWEB_PYTHON:-python3}"

    if [ ! -x "$venv/bin/python" ]; then
        if ! command -v "$python" >/dev/null 2>&1; then
            echo "dshweb: $python not found; install Python 3.11 or newer" >&2
            return 1
        fi
        if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
            echo "dshweb: $python is $("$python" -V 2>&1); dshweb needs Python 3.11 or newer" \
                "(set DSHWEB_PYTHON to another interpreter)" >&2
            return 1
        fi
        echo "dshweb: creating $venv" >&2
        "$python" -m venv "$venv" || return 1
    fi

    want="$("$venv/bin/python" -c 'import hashlib, sys
print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$root/pyproject.toml")" \
        || return 1
    have="$(cat "$stamp" 2>/dev/null || true)"
    # The stamp: "<hash> <extras>", the extras comma-separated.
    had="${have#* }"
    local lacking="" one
    if [ "$had" != dev ]; then
        for one in ${extra//,/ }; do
            case ",$had," in *",$one,"*) ;; *) lacking=yes ;; esac
        done
    fi
    if [ "${have%% *}" != "$want" ] || [ -n "$lacking" ]; then
        local target="$root"
        [ -n "$extra" ] && target="$root[$extra]"
        echo "dshweb: installing dshweb${extra:+[$extra]} into .venv" >&2
        # uv installs it (pip installs uv first): about 10 s on a fresh clone, where pip
        # alone takes about a minute. Where uv cannot (no uv for this platform, an index
        # only pip's own configuration names), pip does it all.
        if ! { "$venv/bin/python" -m pip install --quiet --disable-pip-version-check uv \
            && "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" -e "$target"; } >&2
        then
            echo "dshweb: uv could not install it; pip installs it" >&2
            "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$target" \
                >&2 || return 1
        fi
        printf '%s %s\n' "$want" "$extra" >"$stamp"
    fi

    export VIRTUAL_ENV="$venv"
    case ":$PATH:" in
        *":$venv/bin:"*) ;;
        *) export PATH="$venv/bin:$PATH" ;;
    esac
    unset PYTHONHOME
}

_dshweb_venv_setup "$@" || { unset -f _dshweb_venv_setup; return 1 2>/dev/null || exit 1; }
unset -f _dshweb_venv_setup
