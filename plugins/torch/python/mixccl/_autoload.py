"""torch's device-backend autoload hook (entry point group ``torch.backends``, torch >= 2.5):
``import torch`` calls register_backend() at its end, so ``init_process_group("mixccl")`` works
without ``import mixccl.torch``. ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` makes torch skip it.

torch turns an exception from this hook into a failed ``import torch``. So nothing may escape:
a broken install (the extension missing, built for another torch, a library not found) gives
one warning naming the problem, and torch stays usable without the backend.
"""

import sys
import warnings


def register_backend():
    try:
        import torch.distributed as dist
        if not dist.is_available():  # a torch built without distributed: nothing to register
            return
        import mixccl.torch  # noqa: F401  (registers "mixccl")
    except Exception as err:  # noqa: BLE001  (whatever it is, torch must still import)
        message = (f"mixccl: the torch.distributed backend \"mixccl\" is not available: {err} "
                   "(mixccl-info says what is installed; TORCH_DEVICE_BACKEND_AUTOLOAD=0 skips "
                   "this)")
        try:
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        except Exception:  # noqa: BLE001  (-W error turns the warning into an exception)
            sys.stderr.write(f"RuntimeWarning: {message}\n")
