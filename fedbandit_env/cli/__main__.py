"""``python -m fedbandit_env.cli``: the ``fedbandit`` command without its script."""

from fedbandit_env.cli import main

if __name__ == "__main__":  # (pytest's doctest collection imports this module)
    raise SystemExit(main())
