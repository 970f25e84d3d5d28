"""The controllers of Grove's first API (`grove.dynamo.ai/v1`): PodGangSets and the PodCliques that shape them."""
