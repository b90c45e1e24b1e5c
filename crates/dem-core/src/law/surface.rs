//! What a contact law asks of the other side of a pair, a body (its [`View`]) or a wall: one
//! query interface for both, as parry's shape pairs answer one set of queries whatever the
//! shapes. The laws are written once, generic over [`Surface`], and each kind answers in its own
//! arithmetic: a body in its local frame through its level set (the node laws' hot loop), a wall
//! through its closed form.
//!
//! Conventions: points and vectors global unless said; a surface's level set `phi` is positive
//! outside the body (on the grains' side of a wall), and normals point out of it.

use nalgebra::{Matrix3, Point3, Vector3};

use crate::body::{Cluster, Shape};
use crate::levelset::Slope;
use crate::path::{PerMode, RowWeights};
use crate::view::View;
use crate::wall::Wall;

/// A node of the giving body inside a surface.
pub struct Touch {
    /// The node's global position.
    pub x: Vector3<f64>,
    /// Its penetration `d = -phi` (`> -margin`, see [`Surface::touch`]).
    pub d: f64,
    /// The unit normal out of the surface.
    pub n: Vector3<f64>,
    /// `|grad phi|` of the surface's level set there (1 for a wall).
    pub grad_norm: f64,
    /// The velocity of the surface's material point under the node.
    pub velocity: Vector3<f64>,
    /// The node's position in the surface's frame (a body's local frame; global for a wall).
    pub local: Vector3<f64>,
}

/// What a body's surface keeps of one node query for the reaction on its modes: the level set's
/// amplitude derivative and the material point's mode vectors (empty for rigid bodies and
/// walls), and the reactions' part that waits for the end of the side ([`Surface::flush`]).
/// Made by [`Scratch::for_side`] only, so that each side reuses its thread's buffers.
pub struct Scratch {
    /// `d phi / d eps_a` at the node.
    pub slope: Slope,
    /// The elastic reactions' generalized forces of the side's queries so far, as grid rows'
    /// weights ([`Slope::Corners`]), taken at the end of the side (a grain of four columns or
    /// more: [`crate::path::Configuration::defers_rows`]); the thread's buffers, taken at the
    /// side's first such reaction ([`Scratch::pending`]).
    pending: Option<RowWeights>,
    /// The mode vectors `Phi_a` of the material point under the node.
    pub modes: PerMode<Vector3<f64>>,
    /// Node queries so far ([`crate::law::PairOutcome::node_queries`]).
    pub queries: u64,
    /// `y - X` at the last material point a query pulled back: the displacement there, which
    /// starts the next query's pull-back at `y - (y - X)` (the side's nodes come in clusters,
    /// so the next query is usually close by; [`grain::LevelSetGrid::pull_back_from`]).
    pub displacement: Vector3<f64>,
}

thread_local! {
    /// The pending rows' weights of the thread's last side, emptied ([`Scratch::for_side`]).
    static PENDING: std::cell::Cell<RowWeights> = std::cell::Cell::new(RowWeights::default());
}

impl Scratch {
    /// A scratch for a new side.
    pub fn for_side() -> Scratch {
        Scratch {
            slope: Slope::Zero,
            pending: None,
            modes: PerMode::new(),
            queries: 0,
            displacement: Vector3::zeros(),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(mut pending) = self.pending.take() {
            pending.clear();
            PENDING.set(pending);
        }
    }
}

/// The other side of a pair.
pub trait Surface: Sync {
    /// What the node tests of one giving body share (its pose relative to this surface).
    type Frame;

    /// The frame of `giver`'s nodes against this surface, for node tests with margins of at
    /// most `margin`.
    fn frame(&self, giver: &View, margin: f64) -> Self::Frame;

    /// Whether a cluster of `giver`'s nodes (bounding sphere in the giver's frame, grown by
    /// `grow`, the largest node displacement) may reach inside.
    fn reaches(&self, frame: &Self::Frame, giver: &View, cluster: &Cluster, grow: f64) -> bool;

    /// A ball in `giver`'s frame, centre and radius, outside which no node of `giver` at its
    /// reference position, moved by at most `grow`, can touch (none: no such ball, a wall).
    fn node_ball(&self, frame: &Self::Frame, grow: f64) -> Option<(Vector3<f64>, f64)>;

    /// Node `k` of `giver` (local position `x0`), if it is inside or within `margin >= 0` of
    /// the surface (`phi < margin`; a deformable body's early-out takes `phi_0 < margin` plus
    /// its bound, so that a node in the margin may rarely be missed, never one inside);
    /// `velocity` asks for the material velocity of a deformable surface (its rigid part is
    /// always given), and `scratch` keeps what [`Surface::react`] needs.
    fn touch(
        &self,
        frame: &Self::Frame,
        giver: &View,
        x0: &Vector3<f64>,
        margin: f64,
        velocity: bool,
        scratch: &mut Scratch,
    ) -> Option<Touch>;

    /// The centre the reaction's torque is taken about (none for a wall).
    fn centre(&self) -> Option<&Vector3<f64>>;

    /// The surface's curvature `kappa` at the last touch ([`crate::curvature`]; 0 for a wall).
    fn curvature(&self, touch: &Touch) -> f64;

    /// The body's shape (none for a wall).
    fn shape(&self) -> Option<&Shape>;

    /// Number of modes whose generalized forces the surface takes (0: rigid or a wall).
    fn mode_count(&self) -> usize;

    /// Adds to `modal` the generalized forces of the reaction at the last touch: minus the
    /// elastic energy's derivative through the level set (`energy_slope = dE/d phi`) and the
    /// virtual work of `rest` (the non-elastic part of the reaction, global). A part may wait
    /// in `scratch` for [`Surface::flush`].
    fn react(
        &self,
        scratch: &mut Scratch,
        energy_slope: f64,
        rest: &Vector3<f64>,
        modal: &mut [f64],
    );

    /// Adds to `modal` what the side's reactions left waiting in `scratch`, at the end of the
    /// side.
    fn flush(&self, scratch: &mut Scratch, modal: &mut [f64]);

    /// For a sphere of radius `r` centred at `centre`: the total overlap `delta` with this
    /// surface (a sphere grain's, or a plane's) and the unit normal from the sphere towards it.
    fn sphere_overlap(&self, centre: &Vector3<f64>, r: f64) -> (f64, Vector3<f64>);

    /// Radius of curvature for a sphere contact (none: a plane).
    fn sphere_radius(&self) -> Option<f64>;

    /// The surface's angular velocity (zero for walls, which translate).
    fn spin(&self) -> Vector3<f64>;

    /// Velocity of its (rigid) motion at global point `x`.
    fn velocity_at(&self, x: &Vector3<f64>) -> Vector3<f64>;

    /// Its mass, if it is a free grain (walls and prescribed grains are not moved by forces).
    fn free_mass(&self) -> Option<f64>;
}

/// A body's frame for one giver: `y = R_pq x0 + t_pq` in its local frame, its reach squared,
/// and its centre in the giver's frame.
pub struct BodyFrame {
    rot_pq: Matrix3<f64>,
    t_pq: Vector3<f64>,
    reach: f64,
    reach2: f64,
    centre: Vector3<f64>,
}

impl Surface for View<'_> {
    type Frame = BodyFrame;

    fn frame(&self, p: &View, margin: f64) -> BodyFrame {
        let rot_pq = self.rotation.transpose() * p.rotation;
        let t_pq = self.rotation.transpose() * (p.position - self.position);
        // The node tests add a node's margin to the radius: what is left holds at the largest.
        let reach = self.reach_within(margin) - margin;
        BodyFrame {
            rot_pq,
            t_pq,
            reach,
            reach2: reach * reach,
            centre: rot_pq.transpose() * (-t_pq),
        }
    }

    #[inline(always)]
    fn reaches(&self, f: &BodyFrame, _: &View, c: &Cluster, grow: f64) -> bool {
        (c.centre - f.centre).norm_squared() < (c.radius + grow + f.reach).powi(2)
    }

    #[inline(always)]
    fn node_ball(&self, f: &BodyFrame, grow: f64) -> Option<(Vector3<f64>, f64)> {
        Some((f.centre, f.reach + grow))
    }

    #[inline(always)]
    fn touch(
        &self,
        f: &BodyFrame,
        p: &View,
        x0: &Vector3<f64>,
        margin: f64,
        velocity: bool,
        scratch: &mut Scratch,
    ) -> Option<Touch> {
        let y = f.rot_pq * x0 + f.t_pq;
        let reach2 = if margin == 0.0 {
            f.reach2
        } else {
            (f.reach + margin).powi(2)
        };
        if y.norm_squared() >= reach2 {
            return None;
        }
        scratch.queries += 1;
        let y = Point3::from(y);
        let start = y - scratch.displacement;
        let hit = self.probe(&y, &start, margin, &mut scratch.slope)?;
        if let Some(m) = &hit.material {
            scratch.displacement = y - m;
        }
        let g = hit.grad.norm();
        let x = p.position + p.rotation * x0;
        let n = self.rotation * (hit.grad / g);
        // The material point under the node: its mode vectors are needed for its velocity and
        // the virtual work of the non-elastic forces.
        if velocity {
            self.modes_at(&y, hit.material.as_ref(), &mut scratch.modes);
        }
        Some(Touch {
            x,
            d: -hit.phi,
            n,
            grad_norm: g,
            velocity: self.material_velocity(&x, &scratch.modes),
            local: y.coords,
        })
    }

    fn centre(&self) -> Option<&Vector3<f64>> {
        Some(&self.position)
    }

    fn curvature(&self, t: &Touch) -> f64 {
        let y = Point3::from(t.local);
        (self.shape.curvature).at(&t.local, &self.shape.levelset.locate(&y))
    }

    fn shape(&self) -> Option<&Shape> {
        Some(self.shape)
    }

    fn mode_count(&self) -> usize {
        View::mode_count(self)
    }

    #[inline(always)]
    fn react(&self, s: &mut Scratch, energy_slope: f64, rest: &Vector3<f64>, modal: &mut [f64]) {
        if !self.is_deformable() {
            return;
        }
        // Elastic part: -dE/d eps through the level set (a cell's weights wait for the side's
        // end, [`Surface::flush`], where the configuration defers them); the rest: virtual work.
        match &s.slope {
            Slope::Zero => {}
            Slope::Dense(d) => {
                for (m, d) in modal.iter_mut().zip(d) {
                    *m -= energy_slope * d;
                }
            }
            Slope::Corners { corners, weights } => {
                // The buffers the thread's previous side gave back when it was dropped: made
                // afresh for every side, they grew from nothing each time (docs/performance.md,
                // "Allocations"). Taken by a side that needs them only: moved in and out of the
                // thread's store for every side they were 1.9 % of the periodic bench's rigid
                // step ("The reduction without copies").
                let pending = s.pending.get_or_insert_with(|| PENDING.take());
                self.add_rows(pending, corners, weights, -energy_slope, modal)
            }
        }
        self.add_point_force(&s.modes, rest, modal);
    }

    fn flush(&self, s: &mut Scratch, modal: &mut [f64]) {
        if let Some(pending) = s.pending.as_mut().filter(|p| !p.is_empty()) {
            self.drain_rows(pending, modal);
        }
    }

    fn sphere_overlap(&self, centre: &Vector3<f64>, r: f64) -> (f64, Vector3<f64>) {
        let d = self.position - centre;
        let dist = d.norm();
        (r + self.sphere_radius().unwrap_or(0.0) - dist, d / dist)
    }

    fn sphere_radius(&self) -> Option<f64> {
        self.shape.sphere_radius
    }

    fn spin(&self) -> Vector3<f64> {
        self.spin
    }

    fn velocity_at(&self, x: &Vector3<f64>) -> Vector3<f64> {
        self.point_velocity(x)
    }

    fn free_mass(&self) -> Option<f64> {
        self.body.is_free().then_some(self.shape.mass)
    }
}

impl Surface for Wall {
    type Frame = ();

    fn frame(&self, _: &View, _: f64) {}

    #[inline(always)]
    fn reaches(&self, _: &(), p: &View, c: &Cluster, grow: f64) -> bool {
        self.distance(&(p.position + p.rotation * c.centre)).0 < c.radius + grow
    }

    fn node_ball(&self, _: &(), _: f64) -> Option<(Vector3<f64>, f64)> {
        None
    }

    #[inline(always)]
    fn touch(
        &self,
        _: &(),
        p: &View,
        x0: &Vector3<f64>,
        margin: f64,
        _: bool,
        scratch: &mut Scratch,
    ) -> Option<Touch> {
        scratch.queries += 1;
        let x = p.position + p.rotation * x0;
        let (phi, n) = self.distance(&x);
        (phi < margin).then_some(Touch {
            x,
            d: -phi,
            n,
            grad_norm: 1.0,
            velocity: self.velocity,
            local: x,
        })
    }

    fn centre(&self) -> Option<&Vector3<f64>> {
        None
    }

    fn curvature(&self, _: &Touch) -> f64 {
        0.0
    }

    fn shape(&self) -> Option<&Shape> {
        None
    }

    fn mode_count(&self) -> usize {
        0
    }

    fn react(&self, _: &mut Scratch, _: f64, _: &Vector3<f64>, _: &mut [f64]) {}

    fn flush(&self, _: &mut Scratch, _: &mut [f64]) {}

    fn sphere_overlap(&self, centre: &Vector3<f64>, r: f64) -> (f64, Vector3<f64>) {
        let (phi, normal) = self.distance(centre);
        (r - phi, -normal)
    }

    fn sphere_radius(&self) -> Option<f64> {
        None
    }

    fn spin(&self) -> Vector3<f64> {
        Vector3::zeros()
    }

    fn velocity_at(&self, _: &Vector3<f64>) -> Vector3<f64> {
        self.velocity
    }

    fn free_mass(&self) -> Option<f64> {
        None
    }
}
