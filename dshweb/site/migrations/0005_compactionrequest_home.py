"""A Compact request names the session's home: a session id is unique only within its home."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0004_dsh_web_names"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="compactionrequest",
            name="dashboard_c_session_47e27e_idx",
        ),
        migrations.AddField(
            model_name="compactionrequest",
            name="home",
            field=models.CharField(
                default="local", help_text="The name of the session's home.", max_length=64
            ),
        ),
        migrations.AddIndex(
            model_name="compactionrequest",
            index=models.Index(
                fields=["home", "session_id", "-requested_at"], name="dashboard_c_home_161b8f_idx"
            ),
        ),
    ]
