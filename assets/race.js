// The Race tab's replay (gr.HTML js_on_load): hides every element of the race that carries a
// recorded second (data-t), then shows each when the replay clock reaches it.
const replay = () => {
  const race = element.querySelector(".race");
  if (!race) return;
  const timed = [...race.querySelectorAll("[data-t]")]
    .map((node) => ({ node, at: Number(node.dataset.t) }))
    .sort((a, b) => a.at - b.at);
  const clock = race.querySelector(".race-clock");
  const end = Number(race.dataset.end);
  timed.forEach(({ node }) => node.classList.add("race-hidden"));
  const current = {};
  element.raceReplay = current; // a newer replay stops this one
  const started = performance.now();
  let next = 0;
  const frame = (now) => {
    if (element.raceReplay !== current) return;
    const seconds = (now - started) / 1000;
    while (next < timed.length && timed[next].at <= seconds) timed[next++].node.classList.remove("race-hidden");
    clock.textContent = `${Math.min(seconds, end).toFixed(2)} s`;
    if (next < timed.length) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
};
element.addEventListener("click", (event) => {
  if (event.target.closest(".race-again")) replay();
});
watch("value", replay);
