"""Reports of sweeps: tables, figures and the paper's numbers beside ours."""
