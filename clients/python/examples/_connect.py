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
    curve = {}
    if args.server_key or args.keys:
        if not (args.server_key and args.keys):
            sys.exit("CURVE needs both --server-key and --keys")
        server_key = args.server_key
        if Path(server_key).is_file():
            server_key = hearth_client.load_keys(server_key).public
        mine = hearth_client.load_keys(args.keys)
        curve = {"server_key": server_key, "public_key": mine.public, "secret_key": mine.secret}
    try:
        return hearth_client.Client(args.endpoint, tenant=args.tenant, **curve, **options)
    except hearth_client.ConnectTimeout as err:
        sys.exit(f"hearth: {err.message}")
