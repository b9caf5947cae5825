"""The UI's event handlers, by the names layout.py wires: plain methods, testable without a browser.

Each handler takes the session key first (Gradio's session hash; any string in tests) and returns
or yields the values of its outputs, in the order layout.py wires them. Errors become a status
message (and a toast), never a broken app. Each concern lives in its own module:

  family.py     presets, Load and Unload, and each session's family for the others
  controls.py   the option controls follow the method, the preset and the divergence
  runs.py       starts a session's run from the controls (with csd's memory from memory.py)
  generate.py   the Generate tab: streaming, pacing (pacing.py), Stop and re-runs (stale_runs.py)
  run_charts.py its plotly charts, on their own event, once the run has ended
  what_if_panel.py the last run's rounds replayed on other costs
  compare.py    the Compare tab
  step_mode.py  the Step mode and toy tabs
  export.py     the downloads
  memory.py     csd's correction memory: its owner and lifetime, view, download and upload
"""

from ..models.loading import load_model
from .sharing.session import Sessions
from .tabs.compare import Comparison
from .tabs.controls import Controls
from .tabs.export import Exports
from .tabs.family_panel import FamilyPanel, project_presets
from .tabs.generate import Generation
from .tabs.memory import CorrectionMemories
from .tabs.run_charts import RunCharts
from .tabs.runs import Runs
from .tabs.step_mode import StepMode
from .tabs.what_if_panel import WhatIf


class Handlers:
    """Builds the parts once per app, and offers each handler under the name layout.py wires."""

    def __init__(self, loader=None, presets=None):
        self.sessions = Sessions()
        self.family = FamilyPanel(loader or load_model, list(presets or project_presets()), self.sessions)
        self.presets = self.family.presets
        memories = CorrectionMemories(self.family)
        self.runs = runs = Runs(self.family, memories)
        controls, generation, comparison = Controls(self.family), Generation(runs), Comparison(runs)
        steps, exports = StepMode(runs), Exports(self.sessions)

        self.preset, self.load, self.unload = self.family.preset, self.family.load, self.family.unload
        self.method_changed, self.divergence_changed = controls.method_changed, controls.divergence_changed
        self.generate, self.stop, self.restart, self.changed = (generation.generate, generation.stop,
                                                                generation.restart, generation.changed)
        self.generate_triggered = generation.generate_triggered
        self.show_generate, self.rerender, self.waiting = generation.show_generate, generation.rerender, \
            generation.waiting
        run_charts = RunCharts(self.sessions)
        self.charts_after_run, self.final_charts = run_charts.after_run, run_charts.final
        what_if = WhatIf(self.sessions)
        self.what_if_profile, self.what_if, self.what_if_on_page = what_if.profile_chosen, what_if.project, \
            what_if.on_page
        self.compare, self.compare_estimate = comparison.compare, comparison.estimate
        self.step, self.step_position, self.step_reset = steps.step, steps.step_position, steps.step_reset
        self.step_restart, self.step_check_typed = steps.restart, steps.check_typed
        self.teaching_set, self.step_checks = steps.teaching_set, steps.check_slider
        self.toy_reset, self.toy_step = steps.toy_reset, steps.toy_step
        self.export_json, self.export_charts = exports.export_json, exports.export_charts
        self.correction_memory, self.upload_memory = memories.show, memories.upload
