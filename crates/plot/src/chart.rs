//! The skeleton every plot shares, so that it is written once: the SVG document in the theme
//! ([`svg_document`]), a chart's caption, margin and label areas ([`chart_builder`]), the mesh's and a
//! secondary axis's styles ([`theme_mesh`], [`theme_secondary`]), and [`StepChart`], the chart of one step per
//! labelled category (the compare and trend plots).

use plotters::chart::{ChartBuilder, MeshStyle, SecondaryMeshStyle};
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::drawing::DrawingArea;
use plotters::prelude::*;

use crate::shared::{compact, shorten, OrDraw, PlotError};
use crate::theme::{self, BG, FG, FONT, GRID};

/// The drawing area of a whole SVG document.
pub(crate) type Root<'b> = DrawingArea<SVGBackend<'b>, Shift>;

/// An SVG document of `size` pixels in the theme: the background, what `draw` puts on the root, then the title,
/// the description and the stylesheet ([`theme::finish`]; `kind` names the plot in `data-plot`). `plot` names
/// the plot in an error.
pub(crate) fn svg_document(
    size: (u32, u32),
    title: &str,
    description: &str,
    kind: &str,
    plot: &'static str,
    draw: impl FnOnce(&Root<'_>) -> Result<(), PlotError>,
) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&BG).or_draw(plot)?;
        draw(&root)?;
        root.present().or_draw(plot)?;
    }
    Ok(theme::finish(&svg, title, description, kind))
}

/// The label areas of a chart, in pixels: below it, left of it and, for a secondary axis, right of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LabelAreas {
    pub x: u32,
    pub y: u32,
    pub right: Option<u32>,
}

impl LabelAreas {
    /// Most charts': 50 px below, 70 px left, none on the right.
    pub const USUAL: LabelAreas = LabelAreas { x: 50, y: 70, right: None };
    /// With a secondary axis: 70 px on the right too.
    pub const TWO_AXES: LabelAreas = LabelAreas { right: Some(70), ..LabelAreas::USUAL };
}

/// A chart on `root` in the theme: `title` as its caption (shortened to 90 characters), a 16 px margin and the
/// label `areas`. The caller builds its coordinates.
pub(crate) fn chart_builder<'a, 'b>(
    root: &'a Root<'b>,
    title: &str,
    areas: LabelAreas,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(shorten(title, 90), (FONT, 20).into_font().color(&FG))
        .margin(16)
        .x_label_area_size(areas.x)
        .y_label_area_size(areas.y);
    if let Some(right) = areas.right {
        builder.right_y_label_area_size(right);
    }
    builder
}

/// The theme's mesh: axes in the foreground colour, grid lines (no light ones), labels of `label_px` and axis
/// descriptions of `desc_px`. The caller adds the labels, their formatters and the descriptions, and draws it.
pub(crate) fn theme_mesh<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
    label_px: u32,
    desc_px: u32,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged,
    Y: Ranged,
    DB: DrawingBackend,
{
    mesh.max_light_lines(0)
        .axis_style(FG)
        .bold_line_style(GRID)
        .label_style((FONT, label_px).into_font().color(&FG))
        .axis_desc_style((FONT, desc_px).into_font().color(&FG))
}

/// The theme's secondary (right) axis: 8 labels, in the style of [`theme_mesh`] (14 px labels, 15 px
/// descriptions). The caller adds the description and the formatter, and draws it.
pub(crate) fn theme_secondary<'m, 'a, 'b, X, Y, XT, YT, DB>(
    axes: &'m mut SecondaryMeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut SecondaryMeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged<ValueType = XT> + ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + ValueFormatter<YT>,
    DB: DrawingBackend,
{
    axes.y_labels(8)
        .axis_style(FG)
        .label_style((FONT, 14).into_font().color(&FG))
        .axis_desc_style((FONT, 15).into_font().color(&FG))
}

/// A chart of one step per labelled category (`labels`, oldest or first left) against a value axis from 0 to
/// `top`, in the theme: the caption, the mesh, the axes' descriptions. A label shows at most `label_chars`
/// characters, and only every so many steps when a step is narrower than `min_step_px`. The skeleton of the
/// compare and trend plots.
pub(crate) struct StepChart<'l> {
    pub title: &'l str,
    pub labels: &'l [String],
    pub label_chars: usize,
    pub min_step_px: f64,
    pub top: f64,
    pub x_desc: &'l str,
    pub y_desc: &'l str,
}

/// The plotters chart a [`StepChart`] describes, its mesh drawn.
pub(crate) type Chart<'a, 'b> = plotters::chart::ChartContext<
    'a,
    plotters::prelude::SVGBackend<'b>,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;

impl StepChart<'_> {
    /// Builds the chart on `root` (`width` pixels wide) and draws its mesh; `plot` names the plot in an error.
    pub(crate) fn draw<'a, 'b>(
        &self,
        root: &'a Root<'b>,
        width: u32,
        plot: &'static str,
    ) -> Result<Chart<'a, 'b>, PlotError> {
        let n = self.labels.len().max(1);
        let step_px = f64::from(width.saturating_sub(180)) / n as f64;
        let every = if step_px < self.min_step_px { (self.min_step_px / step_px).ceil() as usize } else { 1 };
        let mut chart = chart_builder(root, self.title, LabelAreas::USUAL)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..self.top)
            .or_draw(plot)?;
        let x_label = |x: &f64| {
            let i = x.round();
            if (x - i).abs() > 1e-9 || i < 0.0 || i as usize >= n || (i as usize) % every != 0 {
                return String::new();
            }
            self.labels.get(i as usize).map_or_else(String::new, |l| shorten(l, self.label_chars))
        };
        let y_label = |y: &f64| compact(*y);
        let mut mesh = chart.configure_mesh();
        mesh.x_labels(n.min(200))
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .y_labels(8)
            .disable_x_mesh()
            .x_desc(self.x_desc)
            .y_desc(self.y_desc);
        theme_mesh(&mut mesh, 14, 15).draw().or_draw(plot)?;
        Ok(chart)
    }
}
