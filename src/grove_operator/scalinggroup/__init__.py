"""The PodCliqueScalingGroup controller: member PodCliques per PCSG replica and the PCSG status."""
