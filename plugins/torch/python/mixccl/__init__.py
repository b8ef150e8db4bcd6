"""mixccl: Python side of the mixccl collective communication library.

``import mixccl.torch`` registers the torch.distributed backend "mixccl".
"""
