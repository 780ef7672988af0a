// The replay page: three.js draws the scene of the JSON in #replay-data (raisimcli/replay/scene.py
// writes it); the controls play it back; a canvas plots the torque table of one joint.
// window.raisimcliReplay is the page's interface for scripts and tests (docs/replay.md).
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';

const data = JSON.parse(document.getElementById('replay-data').textContent);

function bytes(b64) {
  const text = atob(b64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out.buffer;
}
function array(packed) {
  if (packed.f64 !== undefined) return new Float64Array(bytes(packed.f64));
  if (packed.f32 !== undefined) return new Float32Array(bytes(packed.f32));
  return new Uint32Array(bytes(packed.u32));
}

const times = array(data.time);
const frames = data.frames;
const duration = times[frames - 1];

// --- the scene (z up, as in the URDF and the log) ------------------------------------------
THREE.Object3D.DEFAULT_UP.set(0, 0, 1);
const view = document.getElementById('view');
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(window.devicePixelRatio);
view.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0xe8ecf0);
scene.add(new THREE.HemisphereLight(0xffffff, 0x6d6d6d, 1.3));
// the sun casts shadows on the ground from above the robots (it follows the first robot's base)
const sun = new THREE.DirectionalLight(0xffffff, 1.6);
const SUN = new THREE.Vector3(1.5, -1, 3);
renderer.shadowMap.enabled = true;
renderer.shadowMap.type = THREE.PCFSoftShadowMap;
sun.castShadow = true;
sun.shadow.mapSize.set(2048, 2048);
scene.add(sun, sun.target);
const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 500);
const controls = new OrbitControls(camera, renderer.domElement);
controls.enableDamping = false;

const PALETTE = { visual: 0xb4b9c0, collision: 0xd98c3f, inertia: 0x6a8fc9 };
const GHOST = { colour: 0x5b8def, opacity: 0.35 };  // a golden log's robots (compare --html)
function material(shape, ghost) {  // (a URDF colour is read as sRGB)
  const colour = new THREE.Color(ghost ? GHOST.colour : PALETTE[shape.source]);
  let a = 1;
  if (shape.rgba && !ghost) {
    colour.setRGB(shape.rgba[0], shape.rgba[1], shape.rgba[2], THREE.SRGBColorSpace);
    a = shape.rgba[3];
  }
  const opacity = ghost ? GHOST.opacity : a;
  return new THREE.MeshStandardMaterial({
    color: colour, opacity, transparent: opacity < 1, depthWrite: opacity >= 1, roughness: 0.6,
    metalness: 0.1,
  });
}

const meshGeometry = {};
function geometry(shape) {
  const s = shape.size;
  switch (shape.kind) {
    case 'box': return new THREE.BoxGeometry(s[0], s[1], s[2]);
    case 'sphere': return new THREE.SphereGeometry(s[0], 32, 16);
    case 'cylinder': return new THREE.CylinderGeometry(s[0], s[0], s[1], 32).rotateX(Math.PI / 2);
    case 'capsule': return new THREE.CapsuleGeometry(s[0], s[1], 8, 24).rotateX(Math.PI / 2);
    case 'mesh': {
      if (!meshGeometry[shape.mesh]) {
        const m = data.meshes[shape.mesh];
        const g = new THREE.BufferGeometry();
        g.setAttribute('position', new THREE.BufferAttribute(array(m.vertices), 3));
        g.setIndex(new THREE.BufferAttribute(array(m.faces), 1));
        meshGeometry[shape.mesh] = g.toNonIndexed();
        meshGeometry[shape.mesh].computeVertexNormals();
      }
      return meshGeometry[shape.mesh];
    }
  }
  throw new Error(`unknown shape ${shape.kind}`);
}

function placed(object, pose) {
  object.position.fromArray(pose.position);
  object.quaternion.fromArray(pose.quaternion);
  return object;
}

// the ground: a plane with a texture of 0.5 m squares (1 m lines darker)
if (data.world.ground !== null) {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 256;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#b7bdc3';
  ctx.fillRect(0, 0, 256, 256);
  ctx.fillStyle = '#8e969e';
  for (const at of [0, 128]) {
    const w = at === 0 ? 4 : 2;
    ctx.fillRect(at, 0, w, 256);
    ctx.fillRect(0, at, 256, w);
  }
  const texture = new THREE.CanvasTexture(canvas);
  texture.wrapS = texture.wrapT = THREE.RepeatWrapping;
  texture.repeat.set(200, 200);
  texture.anisotropy = renderer.capabilities.getMaxAnisotropy();
  texture.colorSpace = THREE.SRGBColorSpace;
  const plane = new THREE.Mesh(new THREE.PlaneGeometry(400, 400),
    new THREE.MeshStandardMaterial({ map: texture, roughness: 1.0 }));
  plane.position.z = data.world.ground;
  plane.receiveShadow = true;
  scene.add(plane);
}
for (const box of data.world.boxes) {
  const mesh = new THREE.Mesh(new THREE.BoxGeometry(...box.size),
    new THREE.MeshStandardMaterial({ color: 0x8f9a86, roughness: 0.8 }));
  scene.add(placed(mesh, box));
}

const robots = data.robots.map((r) => {
  const links = r.links.map((link) => {
    const group = new THREE.Group();
    group.name = link.name;
    for (const shape of link.shapes) {
      const mesh = new THREE.Mesh(geometry(shape), material(shape, r.ghost));
      mesh.castShadow = !r.ghost;
      if (shape.kind === 'mesh') mesh.scale.fromArray(shape.scale);
      group.add(placed(mesh, shape));
    }
    scene.add(group);
    return group;
  });
  const torque = {};
  for (const [source, packed] of Object.entries(r.torque.sources)) torque[source] = array(packed);
  return {
    name: r.name, base: r.base, rootJoint: r.root_joint, links,
    position: array(r.position), quaternion: array(r.quaternion),
    dofs: r.torque.dofs, units: r.torque.units, torque,
  };
});

// contacts: an arrow per contact, the force on body A, scaled to data.contacts.scale m per N
const contacts = data.contacts && {
  count: array(data.contacts.count), position: array(data.contacts.position),
  force: array(data.contacts.force), scale: data.contacts.scale,
};
const firstContact = [];
if (contacts) {
  let at = 0;
  for (let f = 0; f < frames; f++) { firstContact.push(at); at += contacts.count[f]; }
  if (contacts.scale > 0) {
    const legend = document.getElementById('legend');
    legend.textContent = `contact force arrows: 0.1 m = ${(0.1 / contacts.scale).toPrecision(3)} N`;
    legend.hidden = false;
  }
}
const arrows = [];
const arrowMaterial = new THREE.MeshStandardMaterial({ color: 0xc0392b, roughness: 0.5 });
function arrow() {  // a shaft and a head of unit length along +y, scaled per contact
  const group = new THREE.Group();
  group.add(new THREE.Mesh(new THREE.CylinderGeometry(0.006, 0.006, 1, 12).translate(0, 0.5, 0),
    arrowMaterial));
  group.add(new THREE.Mesh(new THREE.ConeGeometry(0.016, 0.04, 16).translate(0, -0.02, 0),
    arrowMaterial));
  scene.add(group);
  return group;
}
const Y = new THREE.Vector3(0, 1, 0);
function showContacts(f) {
  const n = contacts ? contacts.count[f] : 0;
  for (let i = 0; i < n; i++) {
    if (i === arrows.length) arrows.push(arrow());
    const k = 3 * (firstContact[f] + i);
    const force = new THREE.Vector3(contacts.force[k], contacts.force[k + 1],
      contacts.force[k + 2]);
    const length = force.length() * contacts.scale;
    const a = arrows[i];
    a.position.set(contacts.position[k], contacts.position[k + 1], contacts.position[k + 2]);
    a.visible = length > 1e-4;
    if (a.visible) {
      a.quaternion.setFromUnitVectors(Y, force.normalize());
      const [shaft, head] = a.children;
      const headLength = Math.min(0.04, 0.4 * length);
      shaft.scale.set(1, length - headLength, 1);
      head.position.y = length;
      head.scale.setScalar(headLength / 0.04);
    }
  }
  for (let i = n; i < arrows.length; i++) arrows[i].visible = false;
}

// --- time -----------------------------------------------------------------------------------
const ui = {
  play: document.getElementById('play'), back: document.getElementById('back'),
  forward: document.getElementById('forward'), slider: document.getElementById('slider'),
  speed: document.getElementById('speed'), clock: document.getElementById('clock'),
  follow: document.getElementById('follow'), robot: document.getElementById('robot'),
  dof: document.getElementById('dof'), sources: document.getElementById('sources'),
  plot: document.getElementById('plot'),
};
ui.slider.max = frames - 1;
let frame = 0;
let simTime = 0;
let playing = false;
let lastWall = null;

function frameAt(t) {  // the last frame at or before t
  let lo = 0;
  let hi = frames - 1;
  if (t >= times[hi]) return hi;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (times[mid] <= t + 1e-12) lo = mid; else hi = mid - 1;
  }
  return lo;
}

function basePosition(r, f) {
  const i = Math.max(0, r.links.findIndex((g) => g.name === r.base));
  const k = 3 * (f * r.links.length + i);
  return new THREE.Vector3(r.position[k], r.position[k + 1], r.position[k + 2]);
}

function show(f) {
  const followed = robots[Number(ui.robot.value) || 0];
  const before = followed && followed.links.length ? basePosition(followed, frame) : null;
  frame = f;
  for (const r of robots) {
    const n = r.links.length;
    r.links.forEach((group, i) => {
      const k = f * n + i;
      group.position.set(r.position[3 * k], r.position[3 * k + 1], r.position[3 * k + 2]);
      group.quaternion.set(r.quaternion[4 * k], r.quaternion[4 * k + 1],
        r.quaternion[4 * k + 2], r.quaternion[4 * k + 3]);
    });
  }
  showContacts(f);
  if (followed && followed.links.length) {
    const base = basePosition(followed, f);
    sun.target.position.copy(base);
    sun.position.copy(base).add(SUN);
  }
  if (ui.follow.checked && before) {
    const shift = basePosition(followed, f).sub(before);
    camera.position.add(shift);
    controls.target.add(shift);
  }
  ui.slider.value = f;
  ui.clock.textContent = `t = ${times[f].toFixed(3)} s / ${duration.toFixed(3)} s`;
  drawPlot();
}

function seek(t) { simTime = Math.min(Math.max(t, 0), duration); show(frameAt(simTime)); }
function setPlaying(on) {
  if (on && frame === frames - 1) simTime = 0;
  playing = on;
  lastWall = null;
  ui.play.textContent = on ? 'pause' : 'play';
}

ui.play.addEventListener('click', () => setPlaying(!playing));
ui.back.addEventListener('click', () => { setPlaying(false); simTime = times[Math.max(frame - 1, 0)]; show(frameAt(simTime)); });
ui.forward.addEventListener('click', () => { setPlaying(false); simTime = times[Math.min(frame + 1, frames - 1)]; show(frameAt(simTime)); });
ui.slider.addEventListener('input', () => { setPlaying(false); simTime = times[Number(ui.slider.value)]; show(Number(ui.slider.value)); });
window.addEventListener('keydown', (e) => {
  if (e.target.tagName === 'SELECT' || e.target.tagName === 'INPUT' && e.target.type !== 'range') return;
  if (e.key === ' ') { e.preventDefault(); setPlaying(!playing); }
  if (e.key === 'ArrowLeft') ui.back.click();
  if (e.key === 'ArrowRight') ui.forward.click();
});

// --- the torque plot ------------------------------------------------------------------------
const COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
  '#7f7f7f', '#bcbd22', '#17becf'];
robots.forEach((r, i) => ui.robot.add(new Option(r.name, i)));

function robotChanged() {
  const r = robots[Number(ui.robot.value)];
  ui.dof.innerHTML = '';
  r.dofs.forEach((name, i) => ui.dof.add(new Option(name, i)));
  // the first joint that is not the floating base's
  const first = r.dofs.findIndex((name) => !name.startsWith(`${r.rootJoint}.`));
  ui.dof.value = String(Math.max(first, 0));
  ui.sources.innerHTML = '';
  Object.keys(r.torque).forEach((source, i) => {
    const label = document.createElement('label');
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = source;
    box.addEventListener('change', drawPlot);
    label.style.color = COLOURS[i % COLOURS.length];
    label.append(box, ` ${source}`);
    ui.sources.append(label);
  });
  dofChanged();
}
function dofChanged() {  // the total and every source that is not zero throughout for the joint
  const r = robots[Number(ui.robot.value)];
  const dof = Number(ui.dof.value) || 0;
  const n = r.dofs.length;
  for (const box of ui.sources.querySelectorAll('input')) {
    const v = r.torque[box.value];
    let acts = false;
    for (let f = 1; f < frames && !acts; f++) acts = v[f * n + dof] !== 0;
    box.checked = box.value === 'total' || acts;
  }
  drawPlot();
}
ui.robot.addEventListener('change', robotChanged);
ui.dof.addEventListener('change', dofChanged);

function drawPlot() {
  const canvas = ui.plot;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  if (canvas.width !== width * devicePixelRatio) {
    canvas.width = width * devicePixelRatio;
    canvas.height = height * devicePixelRatio;
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(devicePixelRatio, 0, 0, devicePixelRatio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const r = robots[Number(ui.robot.value)];
  if (!r || r.dofs.length === 0) return;
  const dof = Number(ui.dof.value) || 0;
  const n = r.dofs.length;
  const chosen = [...ui.sources.querySelectorAll('input')].filter((b) => b.checked)
    .map((b) => b.value);
  let lo = Infinity;
  let hi = -Infinity;
  for (const source of chosen) {
    const v = r.torque[source];
    for (let f = 1; f < frames; f++) {
      const x = v[f * n + dof];
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
  }
  if (!(hi >= lo)) { lo = -1; hi = 1; }
  if (hi - lo < 1e-9) { lo -= 1; hi += 1; }
  const pad = { left: 84, right: 12, top: 10, bottom: 26 };
  const X = (t) => pad.left + (width - pad.left - pad.right) * (duration > 0 ? t / duration : 0);
  const Y = (v) => pad.top + (height - pad.top - pad.bottom) * (hi - v) / (hi - lo);
  ctx.font = '11px sans-serif';
  ctx.fillStyle = '#333';
  ctx.strokeStyle = '#bbb';
  ctx.lineWidth = 1;
  ctx.strokeRect(pad.left, pad.top, width - pad.left - pad.right, height - pad.top - pad.bottom);
  ctx.textAlign = 'right';
  // enough digits that the two ends differ
  const digits = Math.min(12, Math.max(3,
    Math.ceil(Math.log10(Math.max(Math.abs(hi), Math.abs(lo)) / (hi - lo))) + 2));
  ctx.fillText(hi.toPrecision(digits), pad.left - 4, pad.top + 9);
  ctx.fillText(lo.toPrecision(digits), pad.left - 4, height - pad.bottom);
  const unit = r.units[dof] || '';
  ctx.save();
  ctx.translate(12, (height - pad.bottom + pad.top) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = 'center';
  ctx.fillText(`${r.dofs[dof]} [${unit}]`, 0, 0);
  ctx.restore();
  ctx.textAlign = 'center';
  ctx.fillText('0 s', X(0), height - 8);
  ctx.fillText(`${duration.toFixed(2)} s`, X(duration) - 14, height - 8);
  if (lo < 0 && hi > 0) {
    ctx.beginPath();
    ctx.moveTo(X(0), Y(0));
    ctx.lineTo(X(duration), Y(0));
    ctx.stroke();
  }
  const sources = Object.keys(r.torque);
  for (const source of chosen) {
    const v = r.torque[source];
    ctx.strokeStyle = COLOURS[sources.indexOf(source) % COLOURS.length];
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    for (let f = 1; f < frames; f++) {
      const x = X(times[f]);
      const y = Y(v[f * n + dof]);
      if (f === 1) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    }
    ctx.stroke();
  }
  ctx.strokeStyle = '#000';
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(X(times[frame]), pad.top);
  ctx.lineTo(X(times[frame]), height - pad.bottom);
  ctx.stroke();
}
ui.plot.addEventListener('click', (e) => {
  const rect = ui.plot.getBoundingClientRect();
  const left = 84;
  const t = (e.clientX - rect.left - left) / (rect.width - left - 12) * duration;
  setPlaying(false);
  seek(t);
});

// --- camera, size and the loop --------------------------------------------------------------
function resize() {
  const w = view.clientWidth;
  const h = view.clientHeight;
  renderer.setSize(w, h);
  camera.aspect = w / Math.max(h, 1);
  camera.updateProjectionMatrix();
  drawPlot();
}
window.addEventListener('resize', resize);

function frameCamera() {
  const box = new THREE.Box3();
  for (const r of robots) for (const g of r.links) box.expandByObject(g);
  if (box.isEmpty()) box.set(new THREE.Vector3(-1, -1, -1), new THREE.Vector3(1, 1, 1));
  const centre = box.getCenter(new THREE.Vector3());
  const size = Math.max(box.getSize(new THREE.Vector3()).length(), 0.6);  // (some room around)
  controls.target.copy(centre);
  camera.position.copy(centre).add(new THREE.Vector3(0.9, -1.3, 0.7).multiplyScalar(size));
  SUN.multiplyScalar(Math.max(1, size));
  const shade = sun.shadow.camera;
  shade.left = shade.bottom = -size;
  shade.right = shade.top = size;
  shade.near = 0.01;
  shade.far = SUN.length() + 4 * size;
  shade.updateProjectionMatrix();
  camera.near = size / 100;
  camera.far = size * 200;
  camera.updateProjectionMatrix();
  controls.update();
}

function tick(wall) {
  if (playing) {
    if (lastWall !== null) {
      simTime += (wall - lastWall) / 1000 * Number(ui.speed.value);
      if (simTime >= duration) { simTime = duration; setPlaying(false); }
      const f = frameAt(simTime);
      if (f !== frame) show(f);
    }
    lastWall = wall;
  }
  controls.update();
  renderer.render(scene, camera);
  requestAnimationFrame(tick);
}

robotChanged();
resize();
show(0);
frameCamera();
simTime = Math.min(Math.max(data.start || 0, 0), duration);
show(frameAt(simTime));
requestAnimationFrame(tick);

// --- the page's interface for scripts and tests ---------------------------------------------
window.raisimcliReplay = {
  ready: true,
  frames,
  duration,
  times: () => Array.from(times),
  frame: () => frame,
  time: () => times[frame],
  playing: () => playing,
  play: () => setPlaying(true),
  pause: () => setPlaying(false),
  seek: (t) => { setPlaying(false); seek(t); return times[frame]; },
  // each link's world position and orientation (quaternion x, y, z, w) at the last frame at or
  // before t, read from the scene graph
  poseAt: (t) => {
    setPlaying(false);
    seek(t);
    scene.updateMatrixWorld(true);
    const robotsOut = {};
    const orientations = {};
    for (const r of robots) {
      const links = {};
      const turns = {};
      for (const g of r.links) {
        links[g.name] = g.getWorldPosition(new THREE.Vector3()).toArray();
        turns[g.name] = g.getWorldQuaternion(new THREE.Quaternion()).toArray();
      }
      robotsOut[r.name] = links;
      orientations[r.name] = turns;
    }
    return { t: times[frame], frame, robots: robotsOut, orientations };
  },
  // per robot, whether any of its links is inside the camera's view
  inView: () => {
    camera.updateMatrixWorld();
    scene.updateMatrixWorld(true);
    const frustum = new THREE.Frustum().setFromProjectionMatrix(new THREE.Matrix4()
      .multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse));
    const out = {};
    for (const r of robots) {
      out[r.name] = r.links.some((g) => frustum.intersectsBox(new THREE.Box3().setFromObject(g)));
    }
    return out;
  },
  render: () => renderer.render(scene, camera),
};
