"""The providers' wing: one package per crowd provider (a Django app each). The registry and
the interface they implement are the core's: `annotation/providers/`."""
