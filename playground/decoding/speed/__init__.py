"""How fast a run is and why: its speed account, the cost model, the bound, the what-if."""
