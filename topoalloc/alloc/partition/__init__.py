"""Subtorus allocation by semitorus partition (Mao, Chen & Watson): preprocessing, EP, NEP, conversion, buddy release."""

from .allocator import IDENTIFY_POLICIES, PartitionAllocator
from .conversion import CONVERSIONS, Conversion, convert
from .schemes import NEP_ORDERS, ep_partition, initial_available_set, nep_partition, split_dimension

__all__ = [
    "PartitionAllocator",
    "IDENTIFY_POLICIES",
    "CONVERSIONS",
    "Conversion",
    "convert",
    "NEP_ORDERS",
    "ep_partition",
    "nep_partition",
    "initial_available_set",
    "split_dimension",
]
