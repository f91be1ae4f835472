"""Export of a namespace's experiences as Agent Skills folders (plan, render, write)."""
