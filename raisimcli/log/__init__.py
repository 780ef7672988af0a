"""HDF5 logs: the writer used by `raisimcli run`, a reader (`open_log`), and `compare`."""

from raisimcli.log.reader import LogFile, Signal, open_log

FORMAT = "raisimcli-log"
FORMAT_VERSION = 1

__all__ = ["FORMAT", "FORMAT_VERSION", "LogFile", "Signal", "open_log"]
