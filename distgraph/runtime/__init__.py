"""SPMD runtime: context (comm, ranks, backend, GPU), config, logging, progress, abort."""

from .config import config, Config, reload_config, override
from .context import Context, get_context, gpu_count, local_rank_from_env
from .log import get_logger, setup_logging
from .progress import Progress
from .abort import install_abort_hook, collective_raise

__all__ = ["config", "Config", "reload_config", "override", "Context", "get_context",
           "gpu_count", "local_rank_from_env", "get_logger", "setup_logging", "Progress",
           "install_abort_hook", "collective_raise"]
