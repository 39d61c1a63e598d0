// lossFigures digests a /v1/whatif answer for the page: each instance's
// replica count (actives plus standbys; warmups are not replicas) now and
// after the loss, and the expected cross-zone traffic now and after.
// Losing most of a zone's instances concentrates replicas on the
// survivors: their counts are what they will hold on disk and in memory.
//
// clients: the metadata's clients [{id, active, standby}]; result: the
// what-if answer ({clients_lost, plan_after: {clients, cross_zone}}); now:
// the metadata's cross_zone or null. Returns {replicas: [{id, now, after,
// lost}] in the order of clients, crossZone: {now, after} or null when
// either figure is unknown}. A pure function, loaded before app.js;
// loss_test.go runs it under Node.
'use strict';

function lossFigures(clients, result, now) {
  const list = (v) => (Array.isArray(v) ? v : []);
  const lost = new Set(list(result && result.clients_lost).map(String));
  const plan = result && result.plan_after && typeof result.plan_after === 'object' ? result.plan_after : null;
  const after = new Map();
  for (const c of list(plan && plan.clients)) {
    if (c && typeof c === 'object') after.set(String(c.id), list(c.active).length + list(c.standby).length);
  }
  const replicas = list(clients).map((c) => {
    const id = String(c.id);
    return {
      id,
      now: list(c.active).length + list(c.standby).length,
      after: lost.has(id) ? 0 : (after.has(id) ? after.get(id) : null),
      lost: lost.has(id),
    };
  });
  const total = (cz) => (cz && typeof cz === 'object' && Number.isFinite(Number(cz.total)) ? Number(cz.total) : null);
  const before = total(now);
  const later = total(plan && plan.cross_zone);
  return { replicas, crossZone: before === null || later === null ? null : { now: before, after: later } };
}

if (typeof module !== 'undefined') module.exports = { lossFigures };
