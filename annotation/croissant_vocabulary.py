"""Croissant 1.1's names the release writes and `scripts/check_release.py` checks, in a module
that imports nothing of Django (the script runs without a configured project)."""

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"

# The RAI vocabulary's 20 fields the NeurIPS 2026 Evaluations & Datasets track asks for, as
# `croissant_rai.ttl` spells them.
RAI_FIELDS = (
    "dataCollection",
    "dataCollectionType",
    "dataCollectionMissingData",
    "dataCollectionRawData",
    "dataCollectionTimeframe",
    "dataImputationProtocol",
    "dataManipulationProtocol",
    "dataPreprocessingProtocol",
    "dataAnnotationProtocol",
    "dataAnnotationPlatform",
    "dataAnnotationAnalysis",
    "dataReleaseMaintenancePlan",
    "personalSensitiveInformation",
    "dataSocialImpact",
    "dataBiases",
    "dataLimitations",
    "dataUseCases",
    "annotationsPerItem",
    "annotatorDemographics",
    "machineAnnotationTools",
)
