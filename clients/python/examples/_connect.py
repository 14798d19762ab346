"""Connection options shared by the examples."""

import argparse
import sys
from pathlib import Path

try:
    try:
        import hearth_client
    except ModuleNotFoundError as err:
        if err.name != "hearth_client":
            raise
        # Running from a checkout without installing: use the package next door.
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        import hearth_client
except ModuleNotFoundError as err:  # pyzmq: the message says what to install
    sys.exit(f"hearth: {err}")


def add_connection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5555", help="the server's endpoint")
    parser.add_argument("--tenant", help="who asks (development mode)")
    parser.add_argument("--server-key", help="the server's CURVE public key (Z85 text or a key file)")
    parser.add_argument("--keys", help="this client's CURVE key file (from `hearth keygen`)")


def connect(args: argparse.Namespace, **options) -> "hearth_client.Client":
    """The client the options ask for. A mistake in them (an endpoint without a scheme, a key
    file that is missing or holds no key) ends the example with one line saying what to fix."""
    curve = {}
    if args.server_key or args.keys:
        if not (args.server_key and args.keys):
            sys.exit("hearth: CURVE needs both --server-key and --keys")
        server_key = args.server_key
        if Path(server_key).is_file():
            server_key = read_keys(server_key, "--server-key").public
        elif len(server_key) != hearth_client.keys.Z85_KEY_CHARS:
            sys.exit(f"hearth: --server-key {server_key}: no such file, nor a {hearth_client.keys.Z85_KEY_CHARS}-"
                     "character Z85 key (`hearth keygen -o server.key` writes server.pub)")
        mine = read_keys(args.keys, "--keys")
        curve = {"server_key": server_key, "public_key": mine.public, "secret_key": mine.secret}
    try:
        return hearth_client.Client(args.endpoint, tenant=args.tenant, **curve, **options)
    except ValueError as err:  # the endpoint or a key, and the fix (did you mean tcp://...?)
        sys.exit(f"hearth: {err}")
    except hearth_client.ConnectTimeout as err:
        sys.exit(f"hearth: {err.message}")


def read_keys(path: str, option: str) -> "hearth_client.KeyPair":
    try:
        return hearth_client.load_keys(path)
    except OSError as err:
        sys.exit(f"hearth: {option} {path}: {err.strerror} (`hearth keygen -o NAME.key` writes a key pair)")
    except ValueError as err:
        sys.exit(f"hearth: {option} {err}")


def run(main) -> None:
    """Exits with main()'s status; a refusal from the server (an unknown tenant, a bad option)
    ends it with the server's one line instead of a traceback, Ctrl-C quietly with 130."""
    try:
        code = main()
    except hearth_client.HearthError as err:
        sys.exit(f"hearth: {err}")
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
