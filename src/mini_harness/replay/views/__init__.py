"""Views of a history: the replay report, its context reports, the timeline that show
prints and the page view writes."""
