"""The dataset flows, one package (and Django app) each; the registry they join is
`annotation.flow_registry`."""
